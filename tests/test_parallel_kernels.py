"""Kernels shared across the threads a run may use (issue 30): convolution bands (or output
channels), big elementwise ops and max pooling give the one-thread results (bit for bit where
the arithmetic is the same, within the interpreter's tolerance for convolution); the worker
threads are few, made once and reused; one thread is used when the BLAS was given one, or
the machine is busy."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import miltext
from miltext.interpreter import blas_threads, fast_kernels, parallel
from support.native import require_native
from support.parts import takes_each_part_once

RNG = np.random.default_rng(3)
SETTER = blas_threads._local_setter()
SPLIT, CLAIMED = parallel.split, parallel.claimed

# ResNet-18's shapes, narrowed: a 7x7 stride-2 stem, max pool, a 3x3 block of 32 rows (shared
# by rows), a 3x3 conv of 7 rows with a bias (shared by output channels), a residual add and
# exp over a big tensor, and a grouped conv of two images.
PROGRAM = """main[CoreML7](%x: (1, 3, 128, 128, fp32), %w1: (32, 3, 7, 7, fp32), %b1: (32, fp32),
                           %w2: (32, 32, 3, 3, fp32), %small: (1, 128, 7, 7, fp32),
                           %w3: (256, 128, 3, 3, fp32), %b3: (256, fp32),
                           %pair: (2, 32, 30, 30, fp32), %w4: (64, 16, 3, 3, fp32)) {
  block0() {
    %stem = conv(x=%x, weight=%w1, bias=%b1, strides=[2, 2], pad_type="custom", pad=[3, 3, 3, 3], name="stem")
    %pooled = max_pool(x=%stem, kernel_sizes=[3, 3], strides=[2, 2], pad_type="custom", pad=[1, 1, 1, 1], name="pool")
    %block = conv(x=%pooled, weight=%w2, pad_type="same", name="block")
    %sum = add(x=%block, y=%pooled, name="sum")
    %deep = conv(x=%small, weight=%w3, bias=%b3, pad_type="same", name="deep")
    %grouped = conv(x=%pair, weight=%w4, groups=2, pad_type="valid", name="grouped")
    %big = exp(x=%stem, name="big")
    %twice = mul(x=%big, y=%big, name="twice")
  } -> (%stem, %pooled, %block, %sum, %deep, %grouped, %twice)
}
"""
INPUTS = {
    "x": RNG.standard_normal((1, 3, 128, 128), np.float32) * 2,   # the stem's output: 131,072 values
    "w1": RNG.standard_normal((32, 3, 7, 7), np.float32) * 0.1,
    "b1": RNG.standard_normal(32, np.float32),
    "w2": RNG.standard_normal((32, 32, 3, 3), np.float32) * 0.1,
    "small": RNG.standard_normal((1, 128, 7, 7), np.float32),
    "w3": RNG.standard_normal((256, 128, 3, 3), np.float32) * 0.05,
    "b3": RNG.standard_normal(256, np.float32),
    "pair": RNG.standard_normal((2, 32, 30, 30), np.float32),
    "w4": RNG.standard_normal((64, 16, 3, 3), np.float32) * 0.1,
}
# elementwise ops and pools are shared from 2 * _SHARE elements (2 * _C_SHARE in C): the test lowers the bar so
# that a model small enough to run quickly reaches it (the add's 32,768 values)
SHARE = 1 << 14


def workers() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("miltext-worker")]


def run_at(threads: int, monkeypatch, pieces: list, program: str = PROGRAM, inputs: dict = INPUTS) -> dict:
    """The program's outputs with the BLAS at `threads` for the calling thread and the machine
    idle; `pieces` gets the count of every split asked for."""
    count_splits(monkeypatch, pieces)
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    if SETTER is None:       # a BLAS other than the bundled OpenBLAS: no thread is lent
        return miltext.Session(miltext.loads(program)).run(inputs)
    before = SETTER(threads)
    try:
        return miltext.Session(miltext.loads(program)).run(inputs)
    finally:
        SETTER(before)


def count_splits(monkeypatch, pieces: list) -> None:
    """pieces gets the count of every split, and of every C call shared with workers."""
    def counted(count, work, share):
        pieces.append(share)
        return SPLIT(count, work, share)

    def claimed(native, run, share, macs):
        if share > 1:
            pieces.append(share)
        return CLAIMED(native, run, share, macs)
    monkeypatch.setattr(parallel, "split", counted)
    monkeypatch.setattr(parallel, "claimed", claimed)


@pytest.fixture
def low_bar(monkeypatch):
    from miltext.interpreter.kernels import elementwise, pool
    monkeypatch.setattr(elementwise, "_SHARE", SHARE)
    monkeypatch.setattr(elementwise, "_C_SHARE", SHARE)
    monkeypatch.setattr(pool, "_SHARE", SHARE)
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))     # two threads, on one core too


def test_two_threads_give_the_one_thread_results(monkeypatch, low_bar):
    one, two = [], []
    alone = run_at(1, monkeypatch, one)
    shared = run_at(2, monkeypatch, two)
    assert one == []                        # one thread: nothing is split
    if SETTER is None:
        assert two == []
        return
    # the stem, the pool, the block conv (Winograd's: its weights' transform, then its bands),
    # the add, the deep conv (blocks of its output channels), the grouped conv, exp and mul:
    # each split in two
    assert two == [2] * 9
    for name in ("pooled", "twice"):                # the same arithmetic on the same bits: the same bits
        np.testing.assert_array_equal(shared[name], alone[name], err_msg=name)
    # the same products, in bands (or blocks): a band's product may be summed in another order
    # by the BLAS (OpenBLAS's Haswell kernels on a Zen 3 did, in the last bits)
    for name in ("stem", "block", "deep", "grouped"):
        np.testing.assert_allclose(shared[name], alone[name], rtol=1e-5, atol=1e-5, err_msg=name)
    for run in (alone, shared):                      # and the add shared in two adds them to the bit
        np.testing.assert_array_equal(run["sum"], run["block"] + run["pooled"])
    # and the one-thread convolution is the definition's
    x = np.pad(INPUTS["small"].astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1)])
    cols = np.lib.stride_tricks.sliding_window_view(x[0], (3, 3), axis=(1, 2))     # C, 7, 7, 3, 3
    want = np.einsum("chwij,ocij->ohw", cols, INPUTS["w3"].astype(np.float64)) + INPUTS["b3"][:, None, None]
    np.testing.assert_allclose(alone["deep"][0], want, rtol=1e-4, atol=1e-4)


def test_without_the_c_products_the_numpy_paths_share_the_work(monkeypatch, low_bar):
    """With a BLAS the C kernels cannot call, the convolutions keep to NumPy's paths: the deep
    conv's one image's windows copied by input channels, then its output channels shared;
    the block conv's weights are transformed by Winograd's C code, shared too."""
    monkeypatch.setattr(fast_kernels, "_blas", False)
    one, two = [], []
    alone = run_at(1, monkeypatch, one)
    shared = run_at(2, monkeypatch, two)
    assert one == [] and two == ([] if SETTER is None else [2] * 10)
    for name in ("stem", "block", "deep", "grouped"):
        np.testing.assert_allclose(shared[name], alone[name], rtol=1e-5, atol=1e-5, err_msg=name)


def test_workers_are_made_once_and_reused(monkeypatch, low_bar):
    run_at(2, monkeypatch, [])
    if SETTER is None:
        assert workers() == []
        return
    made = workers()
    assert 1 <= len(made) <= max(parallel._CORES - 1, 1)
    count = threading.active_count()
    for _ in range(3):
        run_at(2, monkeypatch, [])
    assert workers() == made and threading.active_count() == count


def test_a_busy_machine_runs_on_one_thread(monkeypatch, low_bar):
    pieces = []
    count_splits(monkeypatch, pieces)
    monkeypatch.setattr(os, "getloadavg", lambda: (float(os.cpu_count() or 1) + 1, 0.0, 0.0))
    before = SETTER(2) if SETTER is not None else None
    try:
        miltext.Session(miltext.loads(PROGRAM)).run(INPUTS)
    finally:
        if SETTER is not None:
            SETTER(before)
    assert pieces == []


def test_one_blas_thread_means_one_thread():
    """OPENBLAS_NUM_THREADS=1 (or OMP_NUM_THREADS=1): no split, no worker thread."""
    script = ("import os, threading, numpy as np, miltext\n"
              "from miltext.interpreter import parallel\n"
              "os.getloadavg = lambda: (0.0, 0.0, 0.0)\n"
              "asked = []\n"
              "real = parallel.split\n"
              "parallel.split = lambda c, w, s: (asked.append(s), real(c, w, s))\n"
              "x = np.ones((1, 64, 56, 56), np.float32)\n"
              "w = np.ones((64, 64, 3, 3), np.float32)\n"
              "y = miltext.run(miltext.loads('main[CoreML7](%x: (1, 64, 56, 56, fp32), %w: (64, 64, 3, 3, fp32)) {\\n'\n"
              "                '  block0() {\\n    %y = conv(x=%x, weight=%w, pad_type=\"same\", name=\"y\")\\n  } -> (%y)\\n}\\n'),\n"
              "               {'x': x, 'w': w})['y']\n"
              "assert y[0, 0, 10, 10] == 576 and y[0, 0, 0, 0] == 256\n"
              "print(len(asked), sum(t.name.startswith('miltext-worker') for t in threading.enumerate()))\n")
    for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS"):
        env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
        env[key] = "1"
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["0", "0"], key


def test_a_part_that_fails_fails_the_split_after_every_part_is_done():
    done = []

    def work(start, stop):
        if start:
            raise ValueError("second part")
        threading.Event().wait(0.05)            # the first part outlasts the failing one
        done.append((start, stop))
    with pytest.raises(ValueError, match="second part"):
        parallel.split(10, work, 2)
    assert done == [(0, 5)]
    out = np.empty(100_000, np.float32)
    parallel.chunks(np.add, (np.arange(100_000, dtype=np.float32), np.array(1, np.float32)), out, 2)
    np.testing.assert_array_equal(out, np.arange(1, 100_001, dtype=np.float32))


def test_products_shared_give_the_same_results():
    """The helper products are to call: the parts cover every column once."""
    a = RNG.standard_normal((128, 768), np.float32)
    w = RNG.standard_normal((300, 768), np.float32)       # a linear's (out, in) weight
    y = np.full((128, 300), np.nan, np.float32)
    parallel.product(a, w.T, y, 2)
    np.testing.assert_allclose(y, a @ w.T, rtol=1e-5, atol=1e-4)


def test_a_products_blocks_are_one_a_thread_but_for_long_inputs(monkeypatch):
    """A product's columns are shared evenly among the threads, in multiples of 64 (the BLAS
    packs x again for each block); a long input's turned blocks are cut to TURNED bytes, 128
    columns at the least, and past that multiplied in the BLAS's other order; fewer columns
    than a block a thread keep to NumPy's halves."""
    native = fast_kernels.loaded()
    if native is None or not fast_kernels.multiplies(native):
        pytest.skip("no C kernels that multiply (another BLAS than NumPy's bundled OpenBLAS)")
    blocks = []
    monkeypatch.setattr(fast_kernels, "_fastkernels", type("Counting", (), {
        "__getattr__": lambda self, name: (lambda *a: name == "product_columns"
                                           and blocks.append(a[-3:][::2] + (int(a[4][1]),))
                                           or getattr(native, name)(*a))})())
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    for rows, n, pieces, block in ((16, 768, 2, (384, True)), (16, 1000, 2, (512, True)), (16, 3072, 1, (3072, True)),
                                   (16, 3072, 2, (1536, True)), (4096, 1024, 2, (128, True)),
                                   (8192, 512, 2, (128, False)), (16, 40, 2, None)):
        a = RNG.standard_normal((rows, 64), np.float32)
        w = RNG.standard_normal((n, 64), np.float32)
        y = np.full((rows, n), np.nan, np.float32)
        parallel.product(a, w.T, y, pieces)
        np.testing.assert_allclose(y, a @ w.T, rtol=1e-5, atol=1e-4)
        # one call, which the other threads join in C (counter[1] of them)
        assert blocks == ([] if block is None else [block + (pieces - 1,)]), (rows, n, blocks)
        blocks.clear()
    # a big linear on one thread: one block, the weight as stored times x's transpose
    text = ("main[CoreML7](%x: (128, 768, fp32), %w: (3072, 768, fp32), %b: (3072, fp32)) {\n  block0() {\n"
            "    %y: (128, 3072, fp32) = linear(x=%x, weight=%w, bias=%b)\n  } -> (%y)\n}\n")
    inputs = {"x": RNG.standard_normal((128, 768), np.float32), "w": RNG.standard_normal((3072, 768), np.float32),
              "b": RNG.standard_normal(3072, np.float32)}
    got = run_at(1, monkeypatch, [], text, inputs)["y"]
    assert blocks == [(3072, True, 0)]
    np.testing.assert_allclose(got, inputs["x"] @ inputs["w"].T + inputs["b"], rtol=1e-5, atol=1e-3)


def test_a_products_column_blocks_in_c_give_numpys_product(monkeypatch):
    """product's C blocks (taken from a counter, the BLAS called from C): a linear's weight as
    stored (its transpose multiplied) or laid out (K, N), with and without a bias, to NumPy's
    product; the blocks each run once, however many threads share the counter."""
    native = fast_kernels.loaded()
    if native is None or not fast_kernels.multiplies(native):
        pytest.skip("no C kernels that multiply (another BLAS than NumPy's bundled OpenBLAS)")
    calls = []
    monkeypatch.setattr(fast_kernels, "_fastkernels", type("Counting", (), {
        "__getattr__": lambda self, name: (lambda *a: calls.append(name) or getattr(native, name)(*a))})())
    a = RNG.standard_normal((40, 96), np.float32)
    w = RNG.standard_normal((1000, 96), np.float32)       # (out, in): one block on one thread
    b = RNG.standard_normal(1000, np.float32)
    for given, bias in ((w.T, b), (np.ascontiguousarray(w.T), None)):
        y = np.full((40, 1000), np.nan, np.float32)
        parallel.product(a, given, y, 1, bias)
        np.testing.assert_allclose(y, a @ w.T + (0 if bias is None else b), rtol=1e-5, atol=1e-4)
    assert calls == ["product_columns"] * 2
    for turned in (True, False):        # w's rows times a's transpose, turned into y; or a times w's transpose
        def blocks(counter, out, turned=turned):
            return native.product_columns(a, w, b, out, counter, 40, 96, 1000, 100, True, turned)
        y, counter = np.full((40, 1000), np.nan, np.float32), np.zeros(1, np.int64)
        assert blocks(counter, y) == 10
        np.testing.assert_allclose(y, a @ w.T + b, rtol=1e-5, atol=1e-4)
        takes_each_part_once(blocks, counter, y, 10, 7, np.s_[:, 700:])     # from 7: the last 3 blocks
    with pytest.raises(ValueError):
        native.product_columns(a, w, b, y, np.zeros(1, np.int64), 40, 96, 999, 100, True, True)     # w is not 999 x 96
    with pytest.raises(ValueError):
        native.product_columns(a, w, b, y, np.zeros(1, np.int64), 40, 96, 1000, 0, True, True)      # blocks of nothing
    with pytest.raises(ValueError):
        native.product_columns(a, w, b[:10], y, np.zeros(1, np.int64), 40, 96, 1000, 100, True, True)
    with pytest.raises(TypeError):
        native.product_columns(a, w.astype(np.float64), b, y, np.zeros(1, np.int64), 40, 96, 1000, 100, True, True)


def test_a_stack_of_products_reads_views_in_place_and_takes_each_entry_once(monkeypatch):
    """products (attention's heads, taken from a counter): views of a split, either operand's
    transpose, a broadcast dim, to the product in float64; every entry once however many
    threads share the counter; views it cannot read in place refused, and parallel.matmul
    copying those first."""
    native = fast_kernels.loaded()
    if native is None or not fast_kernels.multiplies(native):
        pytest.skip("no C kernels that multiply (another BLAS than NumPy's bundled OpenBLAS)")
    qkv = RNG.standard_normal((2, 40, 3 * 4 * 16), np.float32).reshape(2, 40, 3, 4, 16).transpose(2, 0, 3, 1, 4)
    q, k, v = qkv                                                  # (2, 4, 40, 16) views, rows 192 floats apart
    scores = RNG.standard_normal((2, 4, 40, 40), np.float32)
    one = RNG.standard_normal((1, 4, 16, 40), np.float32)
    for x, y in ((q, np.swapaxes(k, -1, -2)), (scores, v), (np.swapaxes(q, -1, -2), k),
                 (q, np.broadcast_to(one, (2, 4, 16, 40))), (np.ascontiguousarray(q), np.ascontiguousarray(
                     np.swapaxes(k, -1, -2)))):
        want = np.matmul(x.astype(np.float64), y.astype(np.float64))
        out = np.full(want.shape, np.nan, np.float32)
        spent = np.zeros(1, np.int64)
        assert native.products(x, y, out, spent) == 8                  # 2 x 4 matrices
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)
        takes_each_part_once(lambda counter, into, x=x, y=y: native.products(x, y, into, counter), spent, out, 8, 5,
                             np.s_[1, 1:])                              # from 5: entries (1, 1) .. (1, 3)
    out = np.empty((2, 4, 40, 40), np.float32)
    for x, y in ((q[..., ::2], np.swapaxes(k, -1, -2)[..., ::2, :]),    # neither rows nor columns one float apart
                 (q, np.swapaxes(k, -1, -2)[:, :, :15]),                 # k of 16 against 15
                 (q[:, ::-1], np.swapaxes(k, -1, -2)),                   # a stack dim read backwards
                 (q[:1], np.swapaxes(k, -1, -2))):                       # stacks of other sizes
        with pytest.raises(ValueError):
            native.products(x, y, out, np.zeros(1, np.int64))
    with pytest.raises(ValueError):
        native.products(q, np.swapaxes(k, -1, -2), out[:1], np.zeros(1, np.int64))     # out of another size
    with pytest.raises(TypeError):
        native.products(q, np.swapaxes(k, -1, -2), out.astype(np.float64), np.zeros(1, np.int64))
    # parallel.matmul: a view it cannot read in place copied first, a broadcast dim of 1, on two threads
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    for x, y in ((q[..., ::2], np.swapaxes(k, -1, -2)[..., ::2, :]), (q[:1], np.swapaxes(k, -1, -2)),
                 (q[:, ::-1], np.swapaxes(k, -1, -2))):
        want = np.matmul(x.astype(np.float64), y.astype(np.float64))
        got = np.full(want.shape, np.nan, np.float32)
        parallel.matmul(x, y, got, 2)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_a_negative_pad_is_refused_in_plain_words():
    text = ('main[CoreML7](%x: (1, 2, 8, 8, fp32), %w: (2, 2, 3, 3, fp32)) {\n  block0() {\n'
            '    %y = conv(x=%x, weight=%w, pad_type="custom", pad=[-1, 2, 1, 1], name="y")\n  } -> (%y)\n}\n')
    with pytest.raises(miltext.interpreter.RunError, match=r"pad \[-1, 2, 1, 1\] has a negative amount"):
        miltext.run(miltext.loads(text), {"x": np.ones((1, 2, 8, 8), np.float32), "w": np.ones((2, 2, 3, 3), np.float32)})


# A GPT-2-small block's shapes: layer_norm over 256 rows of 768, the MLP's up projection
# (a weight of 9 MB, multiplied through its transposed view) and its gelu, the attention's two
# batched products (12 heads, one through a transposed view) and its softmax, and a relu of
# ResNet-18's stem output.
BLOCK = """main[CoreML7](%x: (1, 256, 768, fp32), %g: (768, fp32), %b: (768, fp32), %w: (3072, 768, fp32),
                           %bias: (3072, fp32), %h: (1, 256, 3072, fp32), %q: (1, 12, 128, 64, fp32),
                           %k: (1, 12, 128, 64, fp32), %v: (1, 12, 128, 64, fp32), %s: (1, 12, 128, 128, fp32),
                           %stem: (1, 64, 112, 112, fp32)) {
  block0() {
    %norm = layer_norm(x=%x, axes=[-1], gamma=%g, beta=%b, epsilon=1e-5, name="norm")
    %up = linear(x=%x, weight=%w, bias=%bias, name="up")
    %act = gelu(x=%h, mode="EXACT", name="act")
    %scores = matmul(x=%q, y=%k, transpose_x=false, transpose_y=true, name="scores")
    %weights = softmax(x=%s, axis=-1, name="weights")
    %heads = matmul(x=%s, y=%v, transpose_x=false, transpose_y=false, name="heads")
    %rect = relu(x=%stem, name="rect")
  } -> (%norm, %up, %act, %scores, %weights, %heads, %rect)
}
"""
BLOCK_INPUTS = {
    "x": RNG.standard_normal((1, 256, 768), np.float32),
    "g": RNG.standard_normal(768, np.float32), "b": RNG.standard_normal(768, np.float32),
    "w": RNG.standard_normal((3072, 768), np.float32) * 0.03, "bias": RNG.standard_normal(3072, np.float32),
    "h": RNG.standard_normal((1, 256, 3072), np.float32) * 2,
    "q": RNG.standard_normal((1, 12, 128, 64), np.float32), "k": RNG.standard_normal((1, 12, 128, 64), np.float32),
    "v": RNG.standard_normal((1, 12, 128, 64), np.float32), "s": RNG.standard_normal((1, 12, 128, 128), np.float32) * 3,
    "stem": RNG.standard_normal((1, 64, 112, 112), np.float32),
}


def test_a_transformer_block_on_two_threads_gives_the_one_thread_results(monkeypatch):
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))     # two threads, on one core too
    one, two = [], []
    alone = run_at(1, monkeypatch, one, BLOCK, BLOCK_INPUTS)
    shared = run_at(2, monkeypatch, two, BLOCK, BLOCK_INPUTS)
    assert one == []                        # one thread: nothing is split
    # every op of the block split in two (gelu, softmax and layer_norm: by their C kernels)
    assert two == ([2] * (7 if fast_kernels.loaded() else 4) if SETTER is not None else [])
    for name in ("norm", "act", "weights", "rect"):     # rows of the same arithmetic: the same bits
        np.testing.assert_array_equal(shared[name], alone[name], err_msg=name)
    for name in ("up", "scores", "heads"):              # the same products, by columns or heads
        np.testing.assert_allclose(shared[name], alone[name], rtol=1e-5, atol=1e-5, err_msg=name)
    # and what was shared is the definition's
    x, w = BLOCK_INPUTS["x"].astype(np.float64), BLOCK_INPUTS["w"].astype(np.float64)
    np.testing.assert_allclose(shared["up"], x @ w.T + BLOCK_INPUTS["bias"], rtol=1e-4, atol=1e-4)
    q, k, v, s = (BLOCK_INPUTS[n].astype(np.float64) for n in "qkvs")
    np.testing.assert_allclose(shared["scores"], q @ np.swapaxes(k, -1, -2), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(shared["heads"], s @ v, rtol=1e-4, atol=1e-4)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    np.testing.assert_allclose(shared["weights"], e / e.sum(axis=-1, keepdims=True), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(shared["rect"], np.maximum(BLOCK_INPUTS["stem"], 0))
    mean, var = x.mean(axis=-1, keepdims=True), x.var(axis=-1, keepdims=True)
    want = (x - mean) / np.sqrt(var + 1e-5) * BLOCK_INPUTS["g"] + BLOCK_INPUTS["b"]
    np.testing.assert_allclose(shared["norm"], want, rtol=1e-4, atol=1e-4)


def test_a_part_no_worker_has_started_is_run_by_the_caller(monkeypatch):
    """A worker whose core is busy is late: the caller, done with its own part, runs the one the
    worker has not started (once: the worker skips it when it gets there)."""
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    parallel._POOL.start(1)
    release = threading.Event()
    for _ in range(parallel._POOL.workers):        # every worker held (the queue is first in, first out)
        parallel._POOL.queue.put(parallel._Task(lambda start, stop: release.wait(10), 0, 1))
    ran = []
    try:
        parallel.split(10, lambda start, stop: ran.append((start, stop, threading.current_thread())), 2)
    finally:
        release.set()
    assert ran == [(0, 5, threading.current_thread()), (5, 10, threading.current_thread())]
    later = threading.Event()
    parallel._POOL.queue.put(parallel._Task(lambda start, stop: later.set(), 0, 1))
    assert later.wait(10)               # the workers went on past the part the caller took
    assert len(ran) == 2


def worker_cpu() -> float:
    """The CPU seconds the pool's workers have used."""
    return sum(time.clock_gettime(time.pthread_getcpuclockid(t.ident)) for t in workers())


def test_a_worker_waits_awake_for_its_next_part_then_sleeps(monkeypatch):
    require_native("miltext.interpreter._fastkernels")      # the workers spin in C
    monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    monkeypatch.setattr(parallel, "_SPIN", 0.05)
    parallel.split(2, lambda start, stop: None, 2)      # a worker made, and handed a part
    time.sleep(0.2)                                     # past its spin: asleep
    before = worker_cpu()
    ran = []
    parallel.split(2, lambda start, stop: ran.append(threading.current_thread()), 2)
    time.sleep(0.03)
    awake = worker_cpu() - before                       # inside the spin: using its core
    time.sleep(0.2)
    done = worker_cpu() - before
    time.sleep(0.2)
    asleep = worker_cpu() - before - done               # after it: nothing
    assert len(ran) == 2
    assert awake >= 0.01 and 0.02 <= done <= 0.12 and asleep < 0.01


def test_the_spin_ends_when_the_signal_changes_or_the_time_is_up():
    native = require_native("miltext.interpreter._fastkernels")
    signal = np.zeros(1, np.int64)
    start = time.perf_counter()
    assert native.spin(signal, 0, 0.02) is False
    assert 0.02 <= time.perf_counter() - start < 0.5
    threading.Timer(0.01, lambda: signal.__setitem__(0, 7)).start()
    start = time.perf_counter()
    assert native.spin(signal, 0, 1.0) is True and time.perf_counter() - start < 0.5
    assert native.spin(signal, 0, 1.0) is True                   # already not `seen`: at once
    start = time.perf_counter()
    assert native.spin(signal, 7, 5.0) is False                  # at most a second, whatever is asked
    assert time.perf_counter() - start < 1.5
    with pytest.raises(TypeError):
        native.spin(np.zeros(1, np.int32), 0, 0.01)
    with pytest.raises(TypeError):
        native.spin(np.zeros(1, np.float64), 0, 0.01)


def test_the_spin_says_done_first_when_asked():
    native = require_native("miltext.interpreter._fastkernels")
    signal, done = np.zeros(1, np.int64), np.zeros(1, np.int64)
    assert native.spin(signal, 0, 0.0, done) is False and done[0] == 1
    done[0] = 0
    assert native.spin(signal, 3, 1.0, done) is True and done[0] == 1    # changed already: said all the same
    with pytest.raises(TypeError):
        native.spin(signal, 0, 0.0, np.zeros(1, np.int32))
    frozen = np.zeros(1, np.int64)
    frozen.flags.writeable = False
    with pytest.raises((TypeError, BufferError, ValueError)):
        native.spin(signal, 0, 0.0, frozen)
    assert frozen[0] == 0


def test_the_caller_waits_awake_for_a_workers_part(monkeypatch):
    """Asleep, a caller took ~90 us to wake when the worker's part ended last; awake, it sees
    the worker's word once the worker has let go of the GIL."""
    require_native("miltext.interpreter._fastkernels")
    monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    parallel.split(2, lambda start, stop: None, 2)      # a worker made
    time.sleep(0.01)
    started, ran = threading.Event(), []

    def part(start, stop):
        if start:                       # the worker's: long, without the GIL
            started.set()
            time.sleep(0.2)
        else:                           # the caller's: at once, once the worker has its part
            assert started.wait(10)
        ran.append(start)
    before = time.thread_time()
    parallel.split(2, part, 2)
    waited = time.thread_time() - before
    assert sorted(ran) == [0, 1]
    # a tenth of the 200 ms at least: a loaded machine may give the spinning caller a small share
    # of a core (a quarter, with a CI run beside it), a sleeping one uses none of it
    assert waited >= 0.02, f"the caller used {waited * 1e3:.1f} ms of CPU while its worker's part ran: it slept"


# ResNet-18's first layers at full size: a stem, a pool, a residual block, a stride-2 conv
STEM = """main[CoreML7](%x: (1, 3, 224, 224, fp32), %w1: (64, 3, 7, 7, fp32), %w2: (64, 64, 3, 3, fp32),
                           %w3: (128, 64, 3, 3, fp32), %w4: (128, 128, 3, 3, fp32)) {
  block0() {
    %stem = conv(x=%x, weight=%w1, strides=[2, 2], pad_type="custom", pad=[3, 3, 3, 3])
    %r0 = relu(x=%stem)
    %pooled = max_pool(x=%r0, kernel_sizes=[3, 3], strides=[2, 2], pad_type="custom", pad=[1, 1, 1, 1])
    %c1 = conv(x=%pooled, weight=%w2, pad_type="same")
    %r1 = relu(x=%c1)
    %c2 = conv(x=%r1, weight=%w2, pad_type="same")
    %s1 = add(x=%c2, y=%pooled)
    %r2 = relu(x=%s1)
    %c3 = conv(x=%r2, weight=%w3, strides=[2, 2], pad_type="same")
    %r3 = relu(x=%c3)
    %c4 = conv(x=%r3, weight=%w4, pad_type="same")
  } -> (%c4)
}
"""


# A GPT-2-small block's MLP, on 128 tokens
MLP = """main[CoreML7](%x: (1, 128, 768, fp32), %w1: (3072, 768, fp32), %b1: (3072, fp32),
                           %w2: (768, 3072, fp32), %b2: (768, fp32)) {
  block0() {
    %h = linear(x=%x, weight=%w1, bias=%b1)
    %g = gelu(x=%h, mode="EXACT")
    %y = linear(x=%g, weight=%w2, bias=%b2)
    %z = add(x=%y, y=%x)
  } -> (%z)
}
"""


@pytest.mark.skipif(sys.platform != "linux" or SETTER is None, reason="glibc's malloc, the bundled OpenBLAS")
@pytest.mark.parametrize("threads, program", [(2, STEM), (1, MLP)], ids=["stem on two threads", "mlp on one"])
def test_runs_keep_their_memory_for_the_next(threads, program):
    """glibc gave memory back to the system after every run, to fault it in again in the
    next: a ResNet's first layers on two threads (a worker's malloc arena beside the main one),
    1,867 pages a run; a GPT-2 block's MLP on one, ~1,500. Now the runs after the first three
    fault in a few hundred pages between them (a heap may grow once more) and none once
    settled. In a process of its own: what glibc does depends on all that came before."""
    script = ("import os, resource, sys, numpy as np, miltext\n"
              "from miltext.interpreter import parallel\n"
              "os.getloadavg = lambda: (0.0, 0.0, 0.0)\n"
              "parallel._CORES = max(parallel._CORES, 2)\n"
              "rng = np.random.default_rng(5)\n"
              "program = miltext.loads(sys.stdin.read())\n"
              "shapes = {v.name: v.type.shape for v in program.functions['main'].inputs}\n"
              "inputs = {k: rng.standard_normal(v, np.float32) / np.sqrt(np.prod(v[1:])) for k, v in shapes.items()}\n"
              "session = miltext.Session(program)\n"
              "for _ in range(8):\n"
              "    start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
              "    session.run(inputs)\n"
              "    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start)\n"
              "print(parallel._POOL.workers)\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    done = subprocess.run([sys.executable, "-c", script], input=program, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    *faults, made = map(int, done.stdout.split())
    assert made == threads - 1 and sum(faults[3:]) < 400 and max(faults[5:]) < 100, faults
