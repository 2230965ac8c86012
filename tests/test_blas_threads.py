"""NumPy's BLAS threads during a run (issue 30): one thread for a product too small to share,
and for a whole run on a machine whose cores are all busy; every thread otherwise, and the
caller's setting back afterwards."""
import os
from contextlib import nullcontext

import numpy as np

import miltext
from miltext.interpreter import blas_threads


def local_threads(setter) -> int:
    """The calling thread's BLAS thread count (set to itself again: OpenBLAS returns the old one)."""
    now = setter(1)
    setter(now)
    return now


def test_small_products_run_on_one_thread_large_ones_on_all():
    setter = blas_threads._local_setter()
    if setter is None:          # a BLAS other than the bundled OpenBLAS: nothing is changed
        assert isinstance(blas_threads.sized(1), nullcontext)
        return
    before = setter(2)
    try:
        with blas_threads.sized(blas_threads.SMALL - 1):
            assert local_threads(setter) == 1
        assert local_threads(setter) == 2
        with blas_threads.sized(blas_threads.SMALL):
            assert local_threads(setter) == 2
    finally:
        setter(before)


def test_a_run_on_a_busy_machine_holds_to_one_thread(monkeypatch):
    setter = blas_threads._local_setter()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    monkeypatch.setattr(os, "getloadavg", lambda: (cores + 0.5, 0.0, 0.0))
    assert blas_threads.busy()
    monkeypatch.setattr(os, "getloadavg", lambda: (cores - 0.5, 0.0, 0.0))
    assert not blas_threads.busy()
    if setter is None:
        return
    seen = []
    program = miltext.loads("main[CoreML7](%x: (64, 64, fp32)) {\n  block0() {\n"
                            '    %y: (64, 64, fp32) = matmul(x=%x, y=%x, name="y")\n  } -> (%y)\n}\n')
    before = setter(2)
    try:
        for load in (cores + 0.5, 0.0):
            monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
            out = miltext.Session(program).run({"x": np.eye(64, dtype=np.float32)},
                                               observer=lambda *_: seen.append(local_threads(setter)))
            np.testing.assert_array_equal(out["y"], np.eye(64))
        assert seen == [1, 2]
        assert local_threads(setter) == 2          # the caller's count, back after the run
    finally:
        setter(before)
