"""The interpreter's C kernels (miltext.interpreter._fastkernels: layer_norm, gelu, softmax, and
the small products of linear and matmul, on C-contiguous float32): each op run both ways, the C kernel and the NumPy path
(MILTEXT_PURE_PYTHON=1), on the decoder's shapes and on edge values, both held to float64
references and to each other; what the C kernels do not take (fp16, views, other axes) falls back
to NumPy; bad arguments raise, never crash."""
import math

import numpy as np
import pytest

import miltext
from miltext.interpreter import fast_kernels, run
from support.native import require_native

_fastkernels = require_native("miltext.interpreter._fastkernels")
RNG = np.random.default_rng(30)
NAMES = ("gelu", "softmax", "layer_norm", "linear", "matmul")
_DTYPES = {np.float32: "fp32", np.float16: "fp16"}
_erfc = np.vectorize(math.erfc)


class Counting:
    """The C module with a count of the calls each function gets."""

    def __init__(self):
        self.calls = dict.fromkeys(NAMES, 0)

    def __getattr__(self, name):
        def call(*args):
            self.calls[name] += 1
            return getattr(_fastkernels, name)(*args)
        return call


@pytest.fixture(params=["c", "numpy"])
def path(request, monkeypatch):
    """Which kernel runs: "c" (the extension, its calls counted) or "numpy" (turned off)."""
    counting = Counting()
    monkeypatch.setattr(fast_kernels, "_fastkernels", counting)
    if request.param == "c":
        monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)
    else:
        monkeypatch.setenv("MILTEXT_PURE_PYTHON", "1")
    return request.param, counting.calls


@pytest.fixture(params=_fastkernels.loop_sets())
def loops(request):
    """Each set of loops this CPU runs in turn ("plain", then "avx2" and "avx512" where it has
    them: a machine runs only its best unless told), the best again after."""
    before = _fastkernels.loops(request.param)
    yield request.param
    _fastkernels.loops(before)


def run_line(line: str, x, *, out_shape=None, **consts):
    """`%y = line` on input %x (plus fp32 inputs `consts`), in a program of its own."""
    inputs = {"x": x, **consts}
    params = ", ".join(f"%{k}: ({''.join(f'{d}, ' for d in v.shape)}{_DTYPES[v.dtype.type]})"
                       for k, v in inputs.items())
    text = f"main[CoreML7]({params}) {{\n  block0() {{\n    %y = {line}\n  }} -> (%y)\n}}\n"
    return run(miltext.loads(text), inputs)["y"]


def both(line: str, x, **consts):
    """The op's result by the NumPy path, then by the C kernel."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MILTEXT_PURE_PYTHON", "1")
        numpy_result = run_line(line, x, **consts)
        patch.delenv("MILTEXT_PURE_PYTHON")
        assert fast_kernels.loaded() is _fastkernels
        return numpy_result, run_line(line, x, **consts)


def gelu_ref(x):
    x = x.astype(np.float64)
    return 0.5 * x * _erfc(-x / math.sqrt(2))       # not 1 + erf, which loses the negative tail


def gelu_tanh_ref(x):
    x = x.astype(np.float64)
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax_ref(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def layer_norm_ref(x, gamma, beta, eps, axes=(-1,)):
    x = x.astype(np.float64)
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def check_ran(path, calls, name):
    kind, _ = path
    assert calls[name] == (1 if kind == "c" else 0)


# ---- the decoder's shapes, both paths against float64 ------------------------------------------
# the NumPy path's 1 + tanh(u) loses digits where tanh u nears -1: an absolute bound there
@pytest.mark.parametrize("mode, ref, atol", [("EXACT", gelu_ref, 1e-7), ("TANH_APPROXIMATION", gelu_tanh_ref, 1e-6)])
def test_gelu_on_a_decoders_hidden_layer(path, mode, ref, atol):
    x = (RNG.standard_normal((1, 16, 256)) * 3).astype(np.float32)
    got = run_line(f'gelu(x=%x, mode="{mode}")', x)
    check_ran(path, path[1], "gelu")
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, ref(x), rtol=2e-6, atol=atol)


def test_gelu_exact_holds_to_the_definition_far_into_both_tails(path):
    x = np.concatenate([np.linspace(-12, 12, 4001), -np.logspace(-30, 1, 300),
                        np.logspace(-30, 1, 300)]).astype(np.float32)
    got = run_line('gelu(x=%x, mode="EXACT")', x)
    check_ran(path, path[1], "gelu")
    np.testing.assert_allclose(got, gelu_ref(x), rtol=1e-5, atol=1e-30)


def test_softmax_of_masked_attention_scores(path):
    """Scores of 4 heads over 16 tokens, the causal mask added as -inf."""
    scores = (RNG.standard_normal((1, 4, 16, 16)) * 5).astype(np.float32)
    scores += np.triu(np.full((16, 16), -np.inf, np.float32), 1)
    got = run_line("softmax(x=%x, axis=-1)", scores)
    check_ran(path, path[1], "softmax")
    np.testing.assert_allclose(got, softmax_ref(scores), rtol=2e-6, atol=1e-9)
    np.testing.assert_allclose(got.sum(axis=-1), 1, rtol=1e-6)
    assert (got[..., np.triu_indices(16, 1)[0], np.triu_indices(16, 1)[1]] == 0).all()


def test_layer_norm_of_a_decoders_tokens(path):
    x = (RNG.standard_normal((1, 16, 64)) * 2 + 3).astype(np.float32)
    gamma = RNG.standard_normal(64).astype(np.float32)
    beta = RNG.standard_normal(64).astype(np.float32)
    got = run_line("layer_norm(x=%x, axes=[-1], gamma=%g, beta=%b, epsilon=1e-5)", x, g=gamma, b=beta)
    check_ran(path, path[1], "layer_norm")
    np.testing.assert_allclose(got, layer_norm_ref(x, gamma, beta, 1e-5), rtol=1e-5, atol=2e-6)


def test_layer_norm_over_the_two_trailing_axes_without_gamma_and_beta(path):
    x = (RNG.standard_normal((3, 5, 7)) * 100).astype(np.float32)
    got = run_line("layer_norm(x=%x, axes=[1, 2], epsilon=1e-3)", x)
    check_ran(path, path[1], "layer_norm")
    np.testing.assert_allclose(got, layer_norm_ref(x, 1.0, 0.0, 1e-3, (1, 2)), rtol=1e-5, atol=2e-6)


# ---- edge values: the C kernel gives what the NumPy path gives -----------------------------------
EDGES = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-38, 1e-45, -1e-45, 3e38, -3e38,
                  100.0, -100.0, 88.0, 89.0, -104.0, 20.0, -20.0, 0.5, -0.5], np.float32)


@pytest.mark.parametrize("mode", ["EXACT", "TANH_APPROXIMATION"])
def test_gelu_of_nan_inf_and_extremes_is_what_the_numpy_path_gives(mode):
    numpy_result, c_result = both(f'gelu(x=%x, mode="{mode}")', EDGES)
    np.testing.assert_array_equal(np.isnan(c_result), np.isnan(numpy_result))
    np.testing.assert_allclose(c_result, numpy_result, rtol=2e-6, atol=1e-37)


def test_softmax_of_nan_inf_masked_and_large_rows_is_what_the_numpy_path_gives():
    rows = np.array([
        [1.0, 2.0, np.nan, 0.0],             # NaN: the row is NaN
        [1.0, np.inf, 0.0, -np.inf],         # +inf: NaN (inf - inf)
        [-np.inf] * 4,                       # masked whole: NaN
        [-np.inf, 0.0, -np.inf, -np.inf],    # masked but one: that one is 1
        [1e30, 1e30, -1e30, 0.0],            # large: the max taken out
        [-1e4, -1e4, 0.5, -1e4],             # attention's -10000 mask
        [3e38, -3e38, 0.0, 1.0],
        [88.0, 89.0, 90.0, -104.0],
    ], np.float32)
    numpy_result, c_result = both("softmax(x=%x, axis=-1)", rows)
    np.testing.assert_array_equal(np.isnan(c_result), np.isnan(numpy_result))
    np.testing.assert_allclose(c_result, numpy_result, rtol=2e-6, atol=1e-12)
    assert np.isnan(c_result[:3]).all() and (c_result[3] == [0, 1, 0, 0]).all()
    # rows of 40: the max taken in 16 lanes, then the last 8 alone; NaN, +inf and the max in each
    wide = RNG.standard_normal((7, 40)).astype(np.float32)
    wide[0, 5], wide[1, 37], wide[2, 20] = np.nan, np.nan, np.inf
    wide[3] = -np.inf
    wide[4, 39], wide[5, 16], wide[6, 0] = 50.0, 50.0, 50.0
    numpy_result, c_result = both("softmax(x=%x, axis=-1)", wide)
    np.testing.assert_array_equal(np.isnan(c_result), np.isnan(numpy_result))
    np.testing.assert_allclose(c_result, numpy_result, rtol=2e-6, atol=1e-12)
    assert np.isnan(c_result[:4]).all() and not np.isnan(c_result[4:]).any()
    assert (c_result[4:].argmax(axis=-1) == [39, 16, 0]).all()


def test_layer_norm_of_nan_inf_and_constant_rows_is_what_the_numpy_path_gives():
    rows = np.array([
        [1.0, 2.0, np.nan, 0.0],
        [1.0, np.inf, 0.0, 2.0],
        [5.0, 5.0, 5.0, 5.0],                # no variance: 0 / sqrt(epsilon)
        [1e-30, 2e-30, 3e-30, 4e-30],
    ], np.float32)
    gamma = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    beta = np.array([0.0, 1.0, -1.0, 2.0], np.float32)
    numpy_result, c_result = both("layer_norm(x=%x, axes=[-1], gamma=%g, beta=%b, epsilon=1e-5)", rows,
                                  g=gamma, b=beta)
    np.testing.assert_array_equal(np.isnan(c_result), np.isnan(numpy_result))
    np.testing.assert_allclose(c_result, numpy_result, rtol=1e-5, atol=1e-6)
    assert np.isnan(c_result[:2]).all() and (c_result[2] == beta).all()


def test_layer_norm_of_values_whose_squares_overflow_fp32_in_the_c_kernel():
    """The C kernel sums in double: the row normalizes to +-1 where the NumPy path's fp32 sum
    of squares is inf (and its result beta)."""
    row = np.array([[1e30, -1e30, 1e30, -1e30]], np.float32)
    _, c_result = both("layer_norm(x=%x, axes=[-1], epsilon=1e-5)", row)
    np.testing.assert_allclose(c_result, [[1, -1, 1, -1]], rtol=1e-6)


# ---- what the C kernels do not take falls back to NumPy ------------------------------------------
def test_fp16_input_takes_the_numpy_path_and_keeps_its_dtype(path):
    x = np.array([[10000.0, 10000.0, 0.0, -3.0]], np.float16)
    for line in ('gelu(x=%x, mode="EXACT")', "softmax(x=%x, axis=-1)", "layer_norm(x=%x, axes=[-1])"):
        got = run_line(line, x)
        assert got.dtype == np.float16
    assert path[1] == dict.fromkeys(NAMES, 0)
    np.testing.assert_array_equal(run_line("softmax(x=%x, axis=-1)", x), np.array([[0.5, 0.5, 0, 0]], np.float16))


def test_a_transposed_view_takes_the_numpy_path_and_the_result_is_the_same(path):
    x = (RNG.standard_normal((8, 6)) * 3).astype(np.float32)
    text = """main[CoreML7](%x: (8, 6, fp32)) {
  block0() {
    %t: (6, 8, fp32) = transpose(x=%x, perm=[1, 0], name="t")
    %g: (6, 8, fp32) = gelu(x=%t, mode="EXACT", name="g")
    %s: (6, 8, fp32) = softmax(x=%t, axis=-1, name="s")
    %n: (6, 8, fp32) = layer_norm(x=%t, axes=[-1], name="n")
  } -> (%g, %s, %n)
}
"""
    got = run(miltext.loads(text), {"x": x})
    assert path[1] == dict.fromkeys(NAMES, 0)     # each reads a strided view
    t = x.T
    np.testing.assert_allclose(got["g"], gelu_ref(t), rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got["s"], softmax_ref(t), rtol=2e-6, atol=1e-9)
    np.testing.assert_allclose(got["n"], layer_norm_ref(t, 1.0, 0.0, 1e-5), rtol=1e-5, atol=2e-6)


def test_softmax_over_another_axis_and_layer_norm_over_leading_axes_take_the_numpy_path(path):
    x = (RNG.standard_normal((4, 5)) * 3).astype(np.float32)
    got = run_line("softmax(x=%x, axis=0)", x)
    np.testing.assert_allclose(got, softmax_ref(x.T).T, rtol=2e-6, atol=1e-9)
    got = run_line("layer_norm(x=%x, axes=[0])", x)
    np.testing.assert_allclose(got, layer_norm_ref(x, 1.0, 0.0, 1e-5, (0,)), rtol=1e-5, atol=2e-6)
    assert path[1] == dict.fromkeys(NAMES, 0)


# (x's shape, the outputs, a bias or not): the decoder's products, and rows and columns past the
# C code's blocks (8, 6 or 4 rows by 2 or 1 vectors of 16, 8 or 4 columns)
@pytest.mark.parametrize("shape, n, bias", [((1, 16, 64), 192, True), ((16, 256), 64, True), ((7, 50), 33, True),
                                            ((2, 3, 5), 70, False), ((4, 64), 512, True), ((5, 3), 1, False),
                                            ((13, 40), 48, True), ((11, 24), 27, True), ((6, 9), 13, False)])
def test_linear_of_a_decoders_rows_and_of_odd_sizes(path, loops, shape, n, bias):
    x = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal((n, shape[-1])).astype(np.float32)
    b = RNG.standard_normal(n).astype(np.float32)
    given = f", bias={b.tolist()}" if bias else ""
    got = run_line(f"linear(x=%x, weight={w.tolist()}{given})", x)
    check_ran(path, path[1], "linear")
    want = x.astype(np.float64) @ w.T.astype(np.float64) + (b if bias else 0)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.sqrt(shape[-1]))


@pytest.mark.parametrize("xs, ys, swap_x, swap_y", [((1, 4, 16, 16), (1, 4, 16, 16), False, True),
                                                    ((2, 3, 5, 7), (2, 3, 7, 40), False, False),
                                                    ((3, 6, 5), (3, 6, 33), True, False), ((9, 4), (4, 2), False, False)])
def test_attentions_products_of_each_head(path, loops, xs, ys, swap_x, swap_y):
    x, y = RNG.standard_normal(xs).astype(np.float32), RNG.standard_normal(ys).astype(np.float32)
    got = run_line(f"matmul(x=%x, y=%w, transpose_x={swap_x}, transpose_y={swap_y})", x, w=y)
    check_ran(path, path[1], "matmul")
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    want = (np.swapaxes(x64, -1, -2) if swap_x else x64) @ (np.swapaxes(y64, -1, -2) if swap_y else y64)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_products_of_views_broadcasts_and_fp16_take_numpy(path):
    x = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    got = run_line("matmul(x=%x, y=%w)", x, w=RNG.standard_normal((1, 8, 3)).astype(np.float32))  # broadcast
    assert got.shape == (2, 4, 3)
    got = run_line("linear(x=%x, weight=%w)", x, w=RNG.standard_normal((3, 8)).astype(np.float32))  # a var weight
    assert got.shape == (2, 4, 3)
    got = run_line(f"linear(x=%x, weight={np.ones((3, 8)).tolist()})", x[:, :3])                   # a strided view
    assert got.shape == (2, 3, 3)
    assert path[1] == dict.fromkeys(NAMES, 0)


# ---- the module itself: what it refuses ----------------------------------------------------------
def test_the_c_functions_refuse_what_they_cannot_take():
    x = np.ones((4, 8), np.float32)
    out = np.empty_like(x)
    with pytest.raises(TypeError):
        _fastkernels.gelu(x.astype(np.float64), out, False)
    with pytest.raises(TypeError):
        _fastkernels.gelu(x, out.astype(np.float16), False)
    with pytest.raises(ValueError):
        _fastkernels.gelu(x, np.empty(31, np.float32), False)
    with pytest.raises((BufferError, ValueError)):
        _fastkernels.gelu(x.T, out, False)                    # not C-contiguous
    with pytest.raises((BufferError, ValueError)):
        _fastkernels.gelu(x, out[::-1], False)                # out reversed: not C-contiguous
    readonly = np.empty_like(x)
    readonly.flags.writeable = False
    with pytest.raises((BufferError, ValueError)):
        _fastkernels.softmax(x, readonly, 8)
    with pytest.raises(ValueError):
        _fastkernels.softmax(x, out, 0)
    with pytest.raises(ValueError):
        _fastkernels.softmax(x, out, 3)                        # 32 values are no whole rows of 3
    with pytest.raises(ValueError):
        _fastkernels.layer_norm(x, out, np.ones(7, np.float32), None, 1e-5, 8)
    with pytest.raises(TypeError):
        _fastkernels.layer_norm(x, out, None, np.ones(8, np.float64), 1e-5, 8)
    with pytest.raises(ValueError):
        _fastkernels.layer_norm(x, out, None, None, 1e-5, -1)
    with pytest.raises(ValueError):
        _fastkernels.linear(x, np.ones((8, 3), np.float32), None, np.empty((4, 4), np.float32), 8, 3)
    with pytest.raises(ValueError):
        _fastkernels.linear(x, np.ones((8, 3), np.float32), np.ones(2, np.float32), np.empty((4, 3), np.float32), 8, 3)
    with pytest.raises(ValueError):
        _fastkernels.linear(x, np.ones((8, 3), np.float32), None, np.empty((4, 3), np.float32), 0, 3)
    with pytest.raises(ValueError):
        _fastkernels.matmul(x, np.ones((8, 3), np.float32), np.empty((4, 3), np.float32), 4, 8, 2, False)
    with pytest.raises(ValueError):
        _fastkernels.matmul(x, np.ones((2, 8, 3), np.float32), np.empty((4, 3), np.float32), 4, 8, 3, True)
    product = np.empty((4, 3), np.float32)
    _fastkernels.linear(x, np.ones((8, 3), np.float32), np.full(3, 0.5, np.float32), product, 8, 3)
    assert (product == 8.5).all()
    _fastkernels.layer_norm(x, x, None, None, 1e-5, 8)         # in place: all equal, so 0
    assert (x == 0).all()
    best = _fastkernels.loops()
    assert _fastkernels.loop_sets()[0] == "plain" and _fastkernels.loop_sets()[-1] == best
    for name in ("sse9", "AVX2", "avx512")[:3 if best != "avx512" else 2]:
        with pytest.raises(ValueError, match="this CPU runs the loops"):
            _fastkernels.loops(name)
    assert _fastkernels.loops() == best                 # a refused name changes nothing
    assert _fastkernels.loops("plain") == best and _fastkernels.loops() == "plain"
    assert _fastkernels.loops(best) == "plain" and _fastkernels.loops() == best


def test_binary_gives_numpys_bits_on_edge_values_and_its_relu_the_relu_ops():
    """binary: x + y, x - y and x y to NumPy's bits over every pair of edge values (NaN, inf, -0,
    denormals, overflow), written over x itself too; with relu, the bits np.maximum(., 0)
    gives (NaN kept, -0 made 0). Parts of 16,384 taken from a counter, each once."""
    from support.parts import takes_each_part_once
    x = np.repeat(EDGES, len(EDGES))
    y = np.tile(EDGES, len(EDGES))
    for op, fn in enumerate((np.add, np.subtract, np.multiply)):
        with np.errstate(all="ignore"):
            want = fn(x, y)
        out = np.full_like(x, 7.0)
        assert _fastkernels.binary(x, y, out, np.zeros(1, np.int64), op, False) == 1
        assert out.tobytes() == want.tobytes(), fn.__name__
        own = x.copy()
        _fastkernels.binary(own, y, own, np.zeros(1, np.int64), op, False)      # in place
        assert own.tobytes() == want.tobytes()
        _fastkernels.binary(x, y, out, np.zeros(1, np.int64), op, True)
        assert out.tobytes() == np.maximum(want, 0).tobytes()
    assert np.signbit(np.float32(-0.0) + np.float32(-0.0))         # the case holds a -0 the relu makes 0
    long_x, long_y = RNG.standard_normal(5 * 16384 + 10).astype(np.float32), RNG.standard_normal(5 * 16384 + 10)
    long_y = long_y.astype(np.float32)

    def run(counter, out):
        return _fastkernels.binary(long_x, long_y, out, counter, 0, True)
    counter, whole = np.zeros(1, np.int64), np.full_like(long_x, np.nan)
    assert run(counter, whole) == 6
    assert whole.tobytes() == np.maximum(long_x + long_y, 0).tobytes()
    takes_each_part_once(run, counter, whole, 6, 4, np.s_[4 * 16384:])
    with pytest.raises(ValueError):
        _fastkernels.binary(x, y[:-1], out, np.zeros(1, np.int64), 0, False)      # not as long
    with pytest.raises(ValueError):
        _fastkernels.binary(x, y, out, np.zeros(1, np.int64), 3, False)           # no op 3
    with pytest.raises(TypeError):
        _fastkernels.binary(x.astype(np.float64), y, out, np.zeros(1, np.int64), 0, False)
    frozen = np.empty_like(x)
    frozen.flags.writeable = False
    with pytest.raises((TypeError, ValueError)):
        _fastkernels.binary(x, y, frozen, np.zeros(1, np.int64), 0, False)


@pytest.mark.parametrize("kernel", ["gelu", "softmax", "layer_norm"])
def test_row_kernels_in_parts_give_the_whole_calls_bits(kernel):
    """gelu, softmax and layer_norm given a counter run parts of whole rows (16,384 values, a
    row at the least) taken from it, each once, to the bits of the call without one."""
    from support.parts import takes_each_part_once
    width = {"gelu": 1, "softmax": 128, "layer_norm": 768}[kernel]
    x = RNG.standard_normal(100_000 // width * width).astype(np.float32)
    gamma, beta = RNG.standard_normal(768).astype(np.float32), RNG.standard_normal(768).astype(np.float32)

    def call(out, counter=None):
        if kernel == "gelu":
            return _fastkernels.gelu(x, out, False, counter)
        if kernel == "softmax":
            return _fastkernels.softmax(x, out, width, counter)
        return _fastkernels.layer_norm(x, out, gamma, beta, 1e-5, width, counter)
    whole = np.full_like(x, np.nan)
    call(whole)
    assert not np.isnan(whole).any()
    each = max(1, 16384 // width) * width                   # values a part holds
    parts = -(-x.size // each)
    late = parts - 2

    def run(counter, out):
        return call(out, counter)
    assert call(np.empty_like(x)) is None                   # no counter: the whole, at once
    got, counter = np.full_like(x, np.nan), np.zeros(1, np.int64)
    assert run(counter, got) == parts
    assert got.tobytes() == whole.tobytes()
    takes_each_part_once(run, counter, got, parts, late, np.s_[late * each:])
    with pytest.raises(TypeError):
        call(np.empty_like(x), np.zeros(1))                 # a float64 counter


def test_binary_repeats_a_shorter_y_along_x():
    """y one value (a scale), or x's trailing dims (an attention mask over the heads): repeated
    along x, to NumPy's bits, the parts cutting y's runs anywhere."""
    x = RNG.standard_normal((12, 128, 128)).astype(np.float32)
    for y in (np.array(0.125, np.float32), RNG.standard_normal((128, 128)).astype(np.float32),
              RNG.standard_normal(128).astype(np.float32)):
        for op, fn in enumerate((np.add, np.subtract, np.multiply)):
            out = np.full_like(x, np.nan)
            counter = np.zeros(1, np.int64)
            assert _fastkernels.binary(x, y, out, counter, op, op == 0) == -(-x.size // 16384)
            want = fn(x, y)
            assert out.tobytes() == (np.maximum(want, 0) if op == 0 else want).tobytes()
    with pytest.raises(ValueError):
        _fastkernels.binary(x, np.ones(100, np.float32), np.empty_like(x), np.zeros(1, np.int64), 0, False)
    with pytest.raises(ValueError):
        _fastkernels.binary(x, np.ones(0, np.float32), np.empty_like(x), np.zeros(1, np.int64), 0, False)


@pytest.mark.parametrize("line, y", [
    ("mul(x=%x, y=%y)", np.array(0.125, np.float32)),                     # a scale
    ("add(x=%x, y=%y)", np.ones((1, 1, 128, 128), np.float32)),           # a mask over the heads
    ("add(x=%y, y=%x)", np.ones((128,), np.float32)),                     # the smaller one first
    ("sub(x=%x, y=%y)", np.ones((128,), np.float32)),                     # a bias taken away
])
def test_big_fp32_adds_subs_and_muls_run_in_c_with_a_repeated_operand(monkeypatch, line, y):
    from miltext.interpreter import fast_kernels as fk
    calls = []

    class Counting:
        def __getattr__(self, name):
            fn = getattr(_fastkernels, name)
            return (lambda *args: calls.append(name) or fn(*args)) if name == "binary" else fn
    monkeypatch.setattr(fk, "_fastkernels", Counting())
    monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)
    x = RNG.standard_normal((1, 12, 128, 128)).astype(np.float32)
    y = y * RNG.standard_normal(y.shape).astype(np.float32)
    text = (f"main[CoreML7](%x: (1, 12, 128, 128, fp32), %y: ({', '.join(map(str, y.shape)) or ''}{', ' if y.ndim else ''}"
            f"fp32)) {{\n  block0() {{\n    %z = {line}\n  }} -> (%z)\n}}\n")
    got = run(miltext.loads(text), {"x": x, "y": y})["z"]
    fn = {"mul": np.multiply, "add": np.add, "sub": np.subtract}[line[:3]]
    want = fn(y, x) if "x=%y" in line else fn(x, y)
    assert calls == ["binary"] and got.shape == want.shape and got.tobytes() == want.tobytes()
