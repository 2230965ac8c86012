"""What every C kernel that takes its parts from a counter the threads share must do (issue 30:
Winograd's bands, the direct path's bands, a product's blocks of columns)."""
import threading

import numpy as np


def counter(first: int = 0, width: int = 1):
    """A counter of `width` int64s (4: a call with a first phase) whose parts start at `first`."""
    made = np.zeros(width, np.int64)
    made[0] = first
    return made


def takes_each_part_once(run, spent, whole, parts: int, late: int, written, width: int = 1,
                         same_bits: bool = True) -> None:
    """run(counter, out) -> the count of parts it ran. `whole` is what run gave from a counter of
    0 (its values checked by the caller), `spent` that spent counter. Run again with it, none
    is left to run and `whole` stays as it is; from a counter of `late`, only the last parts run,
    writing whole[written] alone (to the same bits, or within float32 rounding where not
    `same_bits`: parts run together as one product of other sizes, which the BLAS may round
    otherwise); two threads sharing a counter run each of the `parts` once between them, to the
    same bits as one thread. Counters are `width` int64s."""
    kept = whole.copy()
    assert run(spent, whole) == 0
    np.testing.assert_array_equal(whole, kept)
    tail = np.full_like(whole, np.nan)
    assert run(counter(late, width), tail) == parts - late
    if same_bits:
        np.testing.assert_array_equal(tail[written], whole[written])
    else:
        np.testing.assert_allclose(tail[written], whole[written], rtol=1e-6, atol=1e-6)
    tail[written] = np.nan
    assert np.isnan(tail).all()
    shared, shared_counter, ran = np.full_like(whole, np.nan), counter(0, width), []
    threads = [threading.Thread(target=lambda: ran.append(run(shared_counter, shared))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(ran) == parts
    np.testing.assert_array_equal(shared, whole)
