"""What every C kernel that takes its parts from a counter the threads share must do (issue 30:
Winograd's bands, the direct path's bands, a product's blocks of columns)."""
import threading

import numpy as np


def takes_each_part_once(run, counter, whole, parts: int, late: int, written) -> None:
    """run(counter, out) -> the count of parts it ran. `whole` is what run gave from a counter of
    0 (its values checked by the caller), `counter` that spent counter. Run again with it, none
    is left to run and `whole` stays as it is; from a counter of `late`, only the last parts run,
    writing whole[written] alone; two threads sharing a counter run each of the `parts` once
    between them, to the same bits as one thread."""
    kept = whole.copy()
    assert run(counter, whole) == 0
    np.testing.assert_array_equal(whole, kept)
    tail = np.full_like(whole, np.nan)
    assert run(np.array([late], np.int64), tail) == parts - late
    np.testing.assert_array_equal(tail[written], whole[written])
    tail[written] = np.nan
    assert np.isnan(tail).all()
    shared, counter, ran = np.full_like(whole, np.nan), np.zeros(1, np.int64), []
    threads = [threading.Thread(target=lambda: ran.append(run(counter, shared))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(ran) == parts
    np.testing.assert_array_equal(shared, whole)
