"""A C call's parts joined by the pool's workers (issue 30): the calling thread posts the call,
and a worker spinning between pieces (spin's `joins`) takes parts of it at once, in C, with no
task or GIL between; a worker asleep is handed a task that joins it. Whoever runs them, the
parts are the ones the call alone would run, to the same bits; without a worker, the caller
runs them all; a forked child starts with none spinning."""

import os
import threading
import time

import numpy as np
import pytest

from miltext.interpreter import blas_threads, fast_kernels, parallel
from support.native import require_native

_fastkernels = require_native("miltext.interpreter._fastkernels")
RNG = np.random.default_rng(41)
# a conv of 64 bands of one output row, a few hundred microseconds each
X = RNG.standard_normal((1, 64, 66, 66)).astype(np.float32)
W = (RNG.standard_normal((128, 64, 3, 3)) / 24).astype(np.float32)
GEOMETRY = np.array([3, 3, 1, 1, 1, 1, 0, 0], np.int64)
BANDS = 64
# A thread's turn on a core is not promised: a loaded machine may keep the worker off it for the
# whole call (a few milliseconds), so a test that needs the worker to take a part gives it tries.
TRIES = 20


def bands(counter) -> tuple:
    """The conv's bands from `counter`: (the count the calling thread ran, the output)."""
    y = np.full((1, 128, 64, 64), np.nan, np.float32)
    ran = _fastkernels.conv_bands(X, W, None, y, counter, GEOMETRY, 1, 64, 66, 66, 128, 64, 64, 1, 128, False)
    return ran, y


@pytest.fixture
def multiplies():
    """The C kernels multiply, the calling thread's BLAS on one thread as in a shared run (its
    own threads would keep the cores from the worker)."""
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    setter = blas_threads._local_setter()
    before = setter(1)
    yield
    setter(before)


def spinning_worker():
    """A thread spinning as a pool worker does between pieces (for up to a second after the last
    job it joined), and the signal that ends its spin; returns once it spins."""
    signal = np.zeros(1, np.int64)
    thread = threading.Thread(target=lambda: _fastkernels.spin(signal, 0, 1.0, None, True))
    thread.start()
    deadline = time.monotonic() + 10
    while _fastkernels.spinners() == 0:
        assert time.monotonic() < deadline, "the worker never spun"
        time.sleep(0.001)
    return thread, signal


def test_a_spinning_worker_joins_a_posted_call(multiplies):
    whole_ran, whole = bands(np.zeros(1, np.int64))             # no room for workers: the caller alone
    assert whole_ran == BANDS
    thread, signal = spinning_worker()
    try:
        assert _fastkernels.spinners() == 1
        runs = []
        for _ in range(TRIES):
            ran, joined = bands(np.array([0, 1, 0, 0], np.int64))  # one worker asked to join
            runs.append(ran)
            np.testing.assert_array_equal(joined, whole)
            if ran < BANDS:
                break
    finally:
        signal[0] = 1
        thread.join()
    assert _fastkernels.spinners() == 0
    assert 0 < min(runs) < BANDS, runs  # the worker took the others (each runs for ~0.1 ms or more)


def test_blocks_shared_with_a_worker_lay_out_each_band_once(multiplies):
    """A layer of too few rows (7x7 outputs of 512 channels, two images) shared in blocks of its
    output channels: with a worker asked to join, every band's windows are laid out once, in a
    first phase (parts of 16 input channels from counter[2], counted in counter[3]), to what
    each thread's own layout gives. Not to its bits: a claim's consecutive blocks are one
    product, and claims on two threads are narrower than one thread's, which the BLAS may sum
    in another order (OpenBLAS's Haswell kernels on a Zen 3 did, in the last bit or two)."""
    x = RNG.standard_normal((2, 40, 9, 9)).astype(np.float32)
    w = (RNG.standard_normal((512, 40, 3, 3)) / 20).astype(np.float32)
    b = RNG.standard_normal(512).astype(np.float32)
    geometry = np.array([3, 3, 1, 1, 1, 1, 0, 0], np.int64)

    def blocks(counter):
        y = np.full((2, 512, 7, 7), np.nan, np.float32)
        ran = _fastkernels.conv_bands(x, w, b, y, counter, geometry, 2, 40, 9, 9, 512, 7, 7, 7, 64, True)
        return ran, y
    alone_ran, alone = blocks(np.zeros(1, np.int64))        # each thread its own layout
    assert alone_ran == 16
    counter = np.array([0, 1, 0, 0], np.int64)
    ran, laid_once = blocks(counter)                        # no worker spins: the caller does it all
    assert ran == 16 and counter[3] == 2 * 3                # 2 bands of 40 channels: 3 parts each
    np.testing.assert_allclose(laid_once, alone, rtol=1e-6, atol=1e-6)
    thread, signal = spinning_worker()
    try:
        counter = np.array([0, 1, 0, 0], np.int64)
        ran, joined = blocks(counter)
    finally:
        signal[0] = 1
        thread.join()
    assert ran <= 16 and counter[3] == 6
    np.testing.assert_allclose(joined, alone, rtol=1e-6, atol=1e-6)
    want = np.einsum("nchwij,kcij->nkhw", np.lib.stride_tricks.sliding_window_view(x.astype(np.float64), (3, 3),
                                                                                 axis=(2, 3)), w.astype(np.float64))
    np.testing.assert_allclose(alone, np.maximum(want + b[:, None, None], 0), rtol=1e-4, atol=1e-4)


def test_without_a_worker_spinning_the_caller_runs_every_part(multiplies):
    assert _fastkernels.spinners() == 0
    ran, y = bands(np.array([0, 1, 0, 0], np.int64))
    assert ran == BANDS
    _, whole = bands(np.zeros(1, np.int64))
    np.testing.assert_array_equal(y, whole)


def test_a_worker_asked_for_no_seat_leaves_the_call_alone(multiplies):
    thread, signal = spinning_worker()
    try:
        ran, _ = bands(np.array([0, 0, 0, 0], np.int64))
    finally:
        signal[0] = 1
        thread.join()
    assert ran == BANDS


def test_a_worker_asleep_is_woken_to_join(multiplies, monkeypatch):
    """parallel.claimed hands a worker that is not spinning a task that joins the call."""
    if blas_threads._local_setter() is None:
        pytest.skip("a BLAS other than NumPy's bundled OpenBLAS lends no threads")
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    _, whole = bands(np.zeros(1, np.int64))
    parallel._POOL.start(1)
    handed = []
    hand = parallel._POOL.hand
    monkeypatch.setattr(parallel._POOL, "hand", lambda tasks: handed.append(len(tasks)) or hand(tasks))
    runs, got = [], []
    for _ in range(TRIES):
        deadline = time.monotonic() + 10
        while _fastkernels.spinners():      # a worker sleeps 2 ms after its last piece
            assert time.monotonic() < deadline, "the worker never went to sleep"
            time.sleep(0.005)
        handed.clear()
        got.clear()
        parallel.claimed(_fastkernels, lambda counter: got.append(bands(counter)), 2, 1 << 30)
        assert handed == [1]            # asleep, the worker is handed a task
        ran, y = got[0]
        runs.append(ran)
        np.testing.assert_array_equal(y, whole)
        if ran < BANDS:
            break
    assert 0 < min(runs) < BANDS, runs  # and the task joined the call


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_forked_child_has_no_worker_spinning():
    thread, signal = spinning_worker()
    try:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:                    # the child: none of its parent's threads
            os.write(write, str(_fastkernels.spinners()).encode())
            os._exit(0)
        os.close(write)
        said = os.read(read, 16)
        os.close(read)
        os.waitpid(pid, 0)
    finally:
        signal[0] = 1
        thread.join()
    assert said == b"0"
