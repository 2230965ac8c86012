"""NumPy's BLAS threads during a run (issue 30): a run holds one throughout, and lends the
others to the pool that shares its big products (no OpenBLAS thread is woken), none on a
machine whose cores are all busy; the caller's setting back afterwards. Outside a run, one
thread for a product too small to share, every thread for a big one. A run given `threads`
(`--threads`) uses that many, busy or not, whatever the BLAS was given."""
import math
import os
from contextlib import nullcontext

import numpy as np
import pytest

import miltext
from miltext.cli import main
from miltext.interpreter import blas_threads, fast_kernels, parallel


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


def test_a_run_holds_one_thread_and_lends_the_rest_to_the_pool_unless_busy(monkeypatch):
    setter = blas_threads._local_setter()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    monkeypatch.setattr(blas_threads, "_own_load", lambda: 0.0)      # the load all others'
    monkeypatch.setattr(os, "getloadavg", lambda: (cores + 0.5, 0.0, 0.0))
    assert blas_threads.busy()
    monkeypatch.setattr(os, "getloadavg", lambda: (cores - 0.5, 0.0, 0.0))
    assert not blas_threads.busy()
    if setter is None:
        return
    seen = []
    real = np.matmul

    def spy(x, y, *args, **kwargs):         # the count each product runs with
        if x.shape[0] == 256:               # the big product's (the small one may be C's)
            seen.append(local_threads(setter))
        return real(x, y, *args, **kwargs)

    program = miltext.loads("main[CoreML7](%x: (64, 64, fp32), %b: (256, 256, fp32)) {\n  block0() {\n"
                            '    %y: (64, 64, fp32) = matmul(x=%x, y=%x, name="y")\n'
                            '    %c: (256, 256, fp32) = matmul(x=%b, y=%b, name="c")\n  } -> (%y, %c)\n}\n')
    assert 256 ** 3 >= blas_threads.SMALL > 64 ** 3
    between, pieces = [], []
    split = parallel.split
    monkeypatch.setattr(parallel, "split", lambda count, work, share: (pieces.append(share), split(count, work, share)))
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))     # two threads, on one core too
    monkeypatch.setattr(fast_kernels, "_blas", False)       # NumPy's products (the spy's), not the C blocks
    before = setter(2)
    try:
        monkeypatch.setattr(np, "matmul", spy)
        for load in (cores + 0.5, 0.0):
            monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
            out = miltext.Session(program).run({"x": np.eye(64, dtype=np.float32), "b": np.eye(256, dtype=np.float32)},
                                               observer=lambda *_: between.append(local_threads(setter)))
            np.testing.assert_array_equal(out["y"], np.eye(64))
            np.testing.assert_array_equal(out["c"], np.eye(256))
        # busy: the big product on one thread; else shared by the pool's two threads, each
        # running its BLAS on one
        assert pieces == [2]
        assert seen == [1, 1, 1]
        assert between == [1, 1, 1, 1]          # the run holds one thread between products
        assert local_threads(setter) == 2          # the caller's count, back after the run
    finally:
        setter(before)


BIG_PRODUCT = miltext.loads("main[CoreML7](%b: (256, 256, fp32)) {\n  block0() {\n"
                            '    %c: (256, 256, fp32) = matmul(x=%b, y=%b, name="c")\n  } -> (%c)\n}\n')


def test_a_run_given_threads_uses_that_many_busy_or_not(monkeypatch, tmp_path, capsys):
    setter = blas_threads._local_setter()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    monkeypatch.setattr(blas_threads, "_own_load", lambda: 0.0)
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))     # two threads, on one core too
    monkeypatch.setattr(fast_kernels, "_blas", False)       # NumPy's products, shared by parallel.split
    pieces = []
    split = parallel.split
    monkeypatch.setattr(parallel, "split", lambda count, work, share: (pieces.append(share), split(count, work, share)))
    b = np.arange(256 * 256, dtype=np.float32).reshape(256, 256) % 7
    with pytest.raises(ValueError, match="threads must be a whole number of at least 1, not 0"):
        miltext.Session(BIG_PRODUCT).run({"b": b}, threads=0)
    if setter is None:      # another BLAS: a run keeps to one thread, given threads or not
        lent = []
        miltext.Session(BIG_PRODUCT).run({"b": b}, threads=2, observer=lambda *_: lent.append(blas_threads.lent()))
        assert lent == [1] and pieces == []
        return
    runs = [  # (the BLAS's threads, the machine busy, threads given) -> the threads lent, the pieces
        ((1, True, 2), 2, [2]), ((2, True, None), 1, []), ((2, False, None), 2, [2]), ((2, False, 1), 1, [])]
    before = setter(1)
    try:
        for (blas, busy, threads), lent, shared in runs:
            pieces.clear()
            setter(blas)
            monkeypatch.setattr(os, "getloadavg", lambda busy=busy: (cores + 0.5 if busy else 0.0, 0.0, 0.0))
            seen = []
            out = miltext.Session(BIG_PRODUCT).run({"b": b}, threads=threads, observer=lambda *_, seen=seen: seen.append(
                (blas_threads.lent(), local_threads(setter))))
            np.testing.assert_array_equal(out["c"], b.astype(np.float64) @ b)
            assert (seen, pieces) == ([(lent, 1)], shared), (blas, busy, threads)
            assert local_threads(setter) == blas and blas_threads.lent() == 1     # as before the run
        path = tmp_path / "m.mil"
        path.write_text(miltext.dumps(BIG_PRODUCT))
        np.save(tmp_path / "b.npy", b)
        setter(1)           # left alone, the commands' runs would keep to one thread
        pieces.clear()
        assert main(["run", str(path), "-i", f"b={tmp_path / 'b.npy'}", "--threads", "2", "-o", str(tmp_path / "o.npz")]) == 0
        np.testing.assert_array_equal(np.load(tmp_path / "o.npz")["c"], b.astype(np.float64) @ b)
        assert pieces == [2]
        pieces.clear()      # fp16-check: its fp16 run and its fp32 run, each on the threads given
        assert main(["fp16-check", str(path), "-i", f"b={tmp_path / 'b.npy'}", "--threads", "2"]) == 0
        assert pieces == [2, 2] and "every op stays within fp16's range" in capsys.readouterr().out
    finally:
        setter(before)
    for command in ("run", "fp16-check"):
        for bad in ("0", "-1", "1.5", "two"):
            with pytest.raises(SystemExit):
                main([command, str(path), "--threads", bad])
            assert f"'{bad}' is not a whole number of threads, 1 or more" in capsys.readouterr().err


def test_the_sgemm_found_multiplies_as_numpy_does():
    """blas_threads.sgemm gives the bundled OpenBLAS's cblas_sgemm and the width of its
    integers: called through ctypes as the C kernels call it, it gives NumPy's product."""
    import ctypes
    found = blas_threads.sgemm()
    if blas_threads._local_setter() is None:        # another BLAS: the C kernels never multiply
        assert found is None
        return
    address, ilp64 = found
    size = ctypes.c_int64 if ilp64 else ctypes.c_int
    fn = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_int, ctypes.c_int, size, size, size, ctypes.c_float,
                          ctypes.c_void_p, size, ctypes.c_void_p, size, ctypes.c_float, ctypes.c_void_p, size)(address)
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((5, 7), np.float32), rng.standard_normal((7, 3), np.float32)
    c = np.full((5, 3), np.nan, np.float32)
    fn(101, 111, 111, 5, 3, 7, 1.0, a.ctypes.data, 7, b.ctypes.data, 3, 0.0, c.ctypes.data, 3)   # row-major, as is
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-6)


def test_a_process_does_not_take_its_own_load_for_a_busy_machine(monkeypatch):
    """A process that has kept two cores busy for two minutes (its pool's threads) loads them
    itself: with the load average at 1.9 on two cores, the machine is not busy for it. The same
    load from other processes, while this one was idle, is: every core taken."""
    clock = {"cpu": 0.0, "wall": 0.0}
    monkeypatch.setattr(blas_threads.time, "process_time", lambda: clock["cpu"])
    monkeypatch.setattr(blas_threads.time, "monotonic", lambda: clock["wall"])
    monkeypatch.setattr(blas_threads, "cores", lambda: 2)
    # the kernel's average: 0.1 from others, and this process's two running threads, sampled
    # every 5 seconds with the 1-minute decay
    samples = {"load": 0.1, "at": 0.0}

    def load_average():
        while samples["at"] + 5 <= clock["wall"]:
            samples["at"] += 5
            samples["load"] = samples["load"] * math.exp(-5 / 60) + 2.1 * (1 - math.exp(-5 / 60))
        return samples["load"], 0.0, 0.0
    monkeypatch.setattr(os, "getloadavg", load_average)
    own = blas_threads._OwnLoad()
    monkeypatch.setattr(blas_threads, "_own_load", own)
    for _ in range(120):                    # runs a second apart, each two CPU seconds
        clock["cpu"] += 2.0
        clock["wall"] += 1.0
        assert not blas_threads.busy()
    assert load_average()[0] > 1.8 and 1.7 < own() < 1.8
    monkeypatch.setattr(os, "getloadavg", lambda: (2.1, 2.0, 1.5))
    idle = blas_threads._OwnLoad()
    monkeypatch.setattr(blas_threads, "_own_load", idle)
    for _ in range(120):                    # idle: a millisecond of CPU a second
        clock["cpu"] += 0.001
        clock["wall"] += 1.0
    assert idle() < 0.01 and blas_threads.busy()
