"""Each kernel family on its edge cases (broadcast corners, empty tensors, negative axes,
NaN/inf, fp16 overflow, integer rules, every pad/sampling mode), held to expectations written
in NumPy from the op definitions (coremltools' MIL op docs), not from the kernels."""
import itertools

import numpy as np
import pytest

import miltext
from miltext.interpreter import run

_DTYPES = {np.float32: "fp32", np.float16: "fp16", np.int32: "int32", np.bool_: "bool"}


def run_op(op: str, outputs=("y",), **inputs):
    """One op (text after `%y = `, or a full `%a, %b = ...` line) run on the named inputs."""
    params = ", ".join(f"%{k}: ({''.join(f'{d}, ' for d in v.shape)}{_DTYPES[v.dtype.type]})" for k, v in inputs.items())
    line = op if op.startswith("%") else f"%y = {op}"
    text = f"main[CoreML7]({params}) {{\n  block0() {{\n    {line}\n  }} -> ({', '.join('%' + o for o in outputs)})\n}}\n"
    session = miltext.Session(miltext.loads(text))
    got = session.run(inputs)
    # the second run replays the small ops (replays.py): to the bit what their kernels gave
    again = session.run(inputs)
    for name in outputs:
        np.testing.assert_array_equal(again[name], got[name])
        assert again[name].dtype == got[name].dtype
    return got[outputs[0]] if len(outputs) == 1 else tuple(got[o] for o in outputs)


def f32(x):
    return np.asarray(x, np.float32)


def i32(x):
    return np.asarray(x, np.int32)


def same(got, want, exact=False):
    want = np.asarray(want)
    assert got.shape == want.shape, f"{got.shape} != {want.shape}"
    if exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5, atol=1e-6)


RNG = np.random.default_rng(0)
SPECIAL = f32([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.5])


# ---- elementwise binary: NumPy broadcasting, IEEE specials, integer floor rules ------------------
BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "real_div": np.true_divide,
          "maximum": np.maximum, "minimum": np.minimum, "pow": np.power,
          "less": np.less, "greater_equal": np.greater_equal, "equal": np.equal, "not_equal": np.not_equal}
SHAPES = [((), (2, 3, 4)), ((2, 1, 4), (3, 1)), ((1,), (2, 0, 3)), ((2, 0, 1), (1, 5)), ((4,), (4,))]


@pytest.mark.parametrize("op, shapes", list(itertools.product(BINARY, SHAPES)))
def test_binary_ops_broadcast_as_numpy_does(op, shapes):
    x, y = f32(RNG.uniform(0.5, 2, shapes[0])), f32(RNG.uniform(0.5, 2, shapes[1]))
    with np.errstate(all="ignore"):
        same(run_op(f"{op}(x=%x, y=%y)", x=x, y=y), BINARY[op](x, y))


@pytest.mark.parametrize("op", BINARY)
def test_binary_ops_carry_nan_and_inf_as_ieee_does(op):
    x, y = SPECIAL[:, None], SPECIAL[None, :]     # every pair of specials
    with np.errstate(all="ignore"):
        same(run_op(f"{op}(x=%x, y=%y)", x=x, y=y), BINARY[op](x, y), exact=True)


def test_fp16_arithmetic_overflows_to_inf():
    x = np.array([60000, -60000, 300, 1], np.float16)
    same(run_op("add(x=%x, y=%x)", x=x), np.array([np.inf, -np.inf, 600, 2], np.float16), exact=True)
    same(run_op("mul(x=%x, y=%x)", x=x), np.array([np.inf, np.inf, np.inf, 1], np.float16), exact=True)
    assert run_op("mul(x=%x, y=%x)", x=x).dtype == np.float16


# floor_div rounds toward negative infinity and mod takes the divisor's sign (Python's operator.floordiv
# and operator.mod, which the definitions name), for ints and floats alike.
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_floor_div_and_mod_follow_the_divisors_sign(dtype):
    x = np.array([7, -7, 7, -7, 0, 6, -6], dtype)
    y = np.array([2, 2, -2, -2, 3, -3, 4], dtype)
    div = [a // b for a, b in zip(x.tolist(), y.tolist())]
    rem = [a % b for a, b in zip(x.tolist(), y.tolist())]
    same(run_op("floor_div(x=%x, y=%y)", x=x, y=y), np.array(div, dtype), exact=True)
    same(run_op("mod(x=%x, y=%y)", x=x, y=y), np.array(rem, dtype), exact=True)


def test_logical_ops_on_bools_broadcast():
    x, y = np.array([[True], [False]]), np.array([True, False, True])
    same(run_op("logical_xor(x=%x, y=%y)", x=x, y=y), np.logical_xor(x, y), exact=True)
    same(run_op("logical_and(x=%x, y=%y)", x=x, y=y), np.logical_and(x, y), exact=True)


# ---- elementwise unary, epsilon inputs, cast --------------------------------------------------
UNARY = {"abs": np.abs, "ceil": np.ceil, "floor": np.floor, "sign": np.sign, "sqrt": np.sqrt,
         "exp": np.exp, "tanh": np.tanh, "sin": np.sin, "square": np.square,
         "round": np.round,   # the definition: half to even
         "erf": None}


@pytest.mark.parametrize("op", UNARY)
def test_unary_ops_on_specials_and_empty(op):
    import math
    x = np.concatenate([SPECIAL, f32([0.5, 1.5, 2.5, -0.5, 100.0])])
    fn = UNARY[op] or np.vectorize(math.erf)
    with np.errstate(all="ignore"):
        same(run_op(f"{op}(x=%x)", x=x), fn(x.astype(np.float64)).astype(np.float32))
    assert run_op(f"{op}(x=%x)", x=np.zeros((0, 3), np.float32)).shape == (0, 3)


def test_log_inverse_rsqrt_add_their_epsilon():
    x = f32([0.0, 1.0, 4.0, np.inf])
    with np.errstate(all="ignore"):
        same(run_op("log(x=%x)", x=x), np.log(x + f32(1e-45)))
        same(run_op("log(x=%x, epsilon=1.0)", x=x), np.log(x + 1))
        same(run_op("inverse(x=%x)", x=x), 1 / (x + f32(1e-4)))
        same(run_op("rsqrt(x=%x, epsilon=1.0)", x=x), 1 / np.sqrt(x + 1))


def test_cast_float_to_int_truncates_toward_zero():
    x = f32([2.7, -2.7, 0.5, -0.5, 3.0])
    same(run_op('cast(x=%x, dtype="int32")', x=x), i32([2, -2, 0, 0, 3]), exact=True)
    same(run_op('cast(x=%x, dtype="fp16")', x=f32([70000.0, 1.0])), np.array([np.inf, 1], np.float16), exact=True)
    same(run_op('cast(x=%x, dtype="bool")', x=f32([0.0, -1.0, np.nan])), np.array([False, True, True]), exact=True)


def test_clip_and_select_with_specials():
    x = SPECIAL
    same(run_op("clip(x=%x, alpha=-1.0, beta=1.0)", x=x), np.clip(x, -1, 1), exact=True)
    c = np.array([True, False, True, False, True, False, True])
    same(run_op("select(cond=%c, a=%x, b=0.0)", c=c, x=x), np.where(c, x, 0), exact=True)


# ---- reductions ------------------------------------------------------------------------------
REDUCE = {"reduce_sum": np.sum, "reduce_mean": np.mean, "reduce_max": np.max, "reduce_min": np.min,
          "reduce_prod": np.prod,
          "reduce_l1_norm": lambda x, axis, keepdims: np.abs(x).sum(axis=axis, keepdims=keepdims),
          "reduce_l2_norm": lambda x, axis, keepdims: np.sqrt((x * x).sum(axis=axis, keepdims=keepdims)),
          "reduce_sum_square": lambda x, axis, keepdims: (x * x).sum(axis=axis, keepdims=keepdims),
          "reduce_log_sum": lambda x, axis, keepdims: np.log(x.sum(axis=axis, keepdims=keepdims)),
          "reduce_log_sum_exp": lambda x, axis, keepdims: np.log(np.exp(x.astype(np.float64)).sum(axis=axis, keepdims=keepdims))}
AXES = [[-1], [0, -1], [-2], [1, 2], None]


@pytest.mark.parametrize("op, axes, keep", list(itertools.product(REDUCE, AXES, [True, False])))
def test_reductions_over_negative_and_several_axes(op, axes, keep):
    x = f32(RNG.uniform(0.5, 2, (2, 3, 4)))
    arg = "" if axes is None else f"axes={axes}, "
    want = REDUCE[op](x.astype(np.float64), axis=None if axes is None else tuple(axes), keepdims=keep)
    same(run_op(f"{op}(x=%x, {arg}keep_dims={keep})", x=x), np.asarray(want, np.float32))


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_max", "reduce_mean", "reduce_log_sum_exp"])
def test_reductions_carry_nan_and_inf(op):
    x = f32([[np.nan, 1.0], [np.inf, 1.0], [-np.inf, 1.0], [np.inf, -np.inf]])
    with np.errstate(all="ignore"):
        same(run_op(f"{op}(x=%x, axes=[-1])", x=x), REDUCE[op](x.astype(np.float64), axis=-1, keepdims=False).astype(np.float32), exact=True)


def test_log_sum_exp_of_large_values_does_not_overflow():
    # log(sum(exp(x))) is ~1000.69 here, though exp(1000) overflows in any float
    x = f32([[1000.0, 1000.0], [-1000.0, -1000.0]])
    same(run_op("reduce_log_sum_exp(x=%x, axes=[-1])", x=x), f32([1000 + np.log(2), -1000 + np.log(2)]))


def test_a_sum_over_an_empty_dim_is_zero():
    x = np.zeros((2, 0, 3), np.float32)
    same(run_op("reduce_sum(x=%x, axes=[-2])", x=x), np.zeros((2, 3), np.float32), exact=True)
    same(run_op("reduce_prod(x=%x, axes=[1], keep_dims=True)", x=x), np.ones((2, 1, 3), np.float32), exact=True)


@pytest.mark.parametrize("op, fn", [("reduce_argmax", np.argmax), ("reduce_argmin", np.argmin)])
@pytest.mark.parametrize("axis", [0, -1, -2])
def test_arg_reductions_with_negative_axes(op, fn, axis):
    x = f32([[[3, 1, 3], [0, 5, 5]], [[2, 2, 1], [7, 0, 0]]])     # ties: the first index
    same(run_op(f"{op}(x=%x, axis={axis}, keep_dims=True)", x=x), np.expand_dims(fn(x, axis), axis), exact=True)
    same(run_op(f"{op}(x=%x, axis={axis})", x=x), fn(x, axis), exact=True)


@pytest.mark.parametrize("axis", [0, -1])
@pytest.mark.parametrize("exclusive, reverse", list(itertools.product([False, True], [False, True])))
def test_cumsum_exclusive_and_reverse(axis, exclusive, reverse):
    x = f32(RNG.integers(-3, 4, (3, 4)))
    xs = np.flip(x, axis) if reverse else x
    out = np.cumsum(xs, axis)
    if exclusive:   # the sum of the values strictly before
        out = np.concatenate([np.zeros_like(np.take(out, [0], axis)), np.delete(out, -1, axis)], axis)
    want = np.flip(out, axis) if reverse else out
    same(run_op(f"cumsum(x=%x, axis={axis}, exclusive={exclusive}, reverse={reverse})", x=x), want, exact=True)


# ---- softmax and activations --------------------------------------------------------------------
def softmax_ref(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [-1, 0, -2])
def test_softmax_of_large_and_infinite_values(axis):
    x = f32([[1000.0, 1000.0, -np.inf], [-np.inf, 0.0, 1.0], [88.0, 89.0, -1000.0]])
    same(run_op(f"softmax(x=%x, axis={axis})", x=x), softmax_ref(x, axis).astype(np.float32))


@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_softmax_of_masked_and_moderate_values_holds_to_the_definition(axis):
    """Values whose exps cannot overflow are taken as they are (no max taken out) unless some
    row's exps sum to nearly 0: moderate values, a row masked but for one value (attention's
    -10000), and a row masked whole (each value 1/n, which needs the max taken out)."""
    x = f32(np.clip(RNG.standard_normal((3, 5, 7)) * 4, -63, 63))
    masked = x.copy()
    masked[1] = -10000.0
    masked[1].reshape(-1)[::3] = 0.5
    whole = masked.copy()
    whole[2] = -10000.0
    for values in (x, masked, whole):
        got = run_op(f"softmax(x=%x, axis={axis})", x=values)
        same(got, softmax_ref(values, axis))
        np.testing.assert_allclose(got.sum(axis=axis), 1, rtol=1e-6)


def test_softmax_in_fp16_keeps_its_dtype():
    x = np.array([[10000.0, 10000.0, 0.0]], np.float16)
    got = run_op("softmax(x=%x, axis=-1)", x=x)
    assert got.dtype == np.float16
    same(got, np.array([[0.5, 0.5, 0.0]], np.float16), exact=True)


# ---- slicing, gathering, padding --------------------------------------------------------------
X3 = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


@pytest.mark.parametrize("args, want", [
    ("begin=[0, 0, 3], end=[2, 3, 0], stride=[1, 1, -1]", X3[0:2, 0:3, 3:0:-1]),
    ("begin=[1, 2, -1], end=[0, 0, 0], stride=[-1, -1, -2], end_mask=[True, True, True]", X3[1::-1, 2::-1, -1::-2]),
    ("begin=[0, 1, 0], end=[0, 0, 0], begin_mask=[True, False, True], end_mask=[True, True, True]", X3[:, 1:, :]),
    ("begin=[0, -1, 1], end=[1, 0, 3], squeeze_mask=[False, True, False]", X3[0:1, -1, 1:3]),
    ("begin=[-1, -3, -4], end=[2, -1, 4]", X3[-1:2, -3:-1, -4:4]),
])
def test_slice_by_index_masks_and_negative_strides(args, want):
    same(run_op(f"slice_by_index(x=%x, {args})", x=X3), want, exact=True)


def test_slice_by_size_to_the_end():
    same(run_op("slice_by_size(x=%x, begin=[1, 0, 2], size=[-1, 2, -1])", x=X3), X3[1:, 0:2, 2:], exact=True)


@pytest.mark.parametrize("axis", [0, 1, -1, -2])
def test_gather_with_negative_indices_and_axes(axis):
    idx = i32([[-1, 0], [1, -2]])
    same(run_op(f"gather(x=%x, indices=%i, axis={axis})", x=X3, i=idx), np.take(X3, idx, axis=axis), exact=True)


@pytest.mark.parametrize("index", [-5, 4])
def test_gather_refuses_an_index_outside_the_dim(index):
    """[-4, 4) on a dim of 4: -5 is no index from the end (it once wrapped round to the last)."""
    from miltext.interpreter import RunError
    with pytest.raises(RunError, match="out of bounds"):
        run_op("gather(x=%x, indices=%i, axis=2)", x=X3, i=i32([0, index]))


def test_gather_with_batch_dims_and_a_negative_axis():
    idx = i32([[2, -1], [0, 0]])      # one index row per batch
    want = np.stack([np.take(X3[b], idx[b], axis=-1) for b in range(2)])
    same(run_op("gather(x=%x, indices=%i, axis=-1, batch_dims=1)", x=X3, i=idx), want, exact=True)


def test_gather_along_axis_with_negative_indices():
    idx = i32(np.array([[[-1, 0, 1, -4]] * 3] * 2))
    same(run_op("gather_along_axis(x=%x, indices=%i, axis=-1)", x=X3, i=idx),
         np.take_along_axis(X3, np.where(idx < 0, idx + 4, idx), axis=-1), exact=True)


def test_gather_nd_reads_index_tuples():
    idx = i32([[1, 2], [0, -1]])
    same(run_op("gather_nd(x=%x, indices=%i)", x=X3, i=idx), np.stack([X3[1, 2], X3[0, -1]]), exact=True)


@pytest.mark.parametrize("mode, np_mode", [("constant", "constant"), ("reflect", "reflect"), ("replicate", "edge")])
def test_pad_modes_on_the_last_dims(mode, np_mode):
    got = run_op(f'pad(x=%x, pad=[1, 2, 3, 0], mode="{mode}", constant_val=7.0)', x=X3)
    kw = {"constant_values": 7.0} if mode == "constant" else {}
    same(got, np.pad(X3, [(0, 0), (1, 2), (3, 0)], mode=np_mode, **kw), exact=True)


def test_concat_and_split_on_negative_axes_with_empty_parts():
    e = np.zeros((2, 3, 0), np.float32)
    same(run_op("concat(values=(%x, %e, %x), axis=-1, interleave=False)", x=X3, e=e), np.concatenate([X3, X3], -1), exact=True)
    a, b = run_op("%a, %b = split(x=%x, split_sizes=[1, 3], axis=-1)", outputs=("a", "b"), x=X3)
    same(a, X3[..., :1], exact=True)
    same(b, X3[..., 1:], exact=True)


@pytest.mark.parametrize("ascending", [False, True])
@pytest.mark.parametrize("axis", [-1, 0, 1])
def test_topk_both_orders_on_any_axis(ascending, axis):
    x = f32([[3, 1, 2, 1], [0, 5, 5, -1], [4, 4, 4, 4]])
    v, i = run_op(f"%v, %i = topk(x=%x, k=2, axis={axis}, ascending={ascending})", outputs=("v", "i"), x=x)
    # ties keep the lower index first (stable), as coremltools' value inference sorts
    order = np.argsort(x if ascending else -x, axis=axis, kind="stable")
    idx = np.take(order, [0, 1], axis=axis)
    same(i, idx, exact=True)
    same(v, np.take_along_axis(x, idx, axis=axis), exact=True)


# ---- normalization --------------------------------------------------------------------------
@pytest.mark.parametrize("axes", [[-1], [-2, -1], [1, 2], [0, 2]])
def test_layer_norm_over_several_axes(axes):
    x = f32(RNG.normal(size=(2, 3, 4)))
    ax = tuple(a % 3 for a in axes)
    shape = [x.shape[a] for a in sorted(ax)]
    gamma, beta = f32(RNG.normal(size=shape)), f32(RNG.normal(size=shape))
    xd = x.astype(np.float64)
    norm = (xd - xd.mean(ax, keepdims=True)) / np.sqrt(xd.var(ax, keepdims=True) + 1e-5)
    bshape = [x.shape[i] if i in ax else 1 for i in range(3)]
    want = norm * gamma.reshape(bshape) + beta.reshape(bshape)
    same(run_op(f"layer_norm(x=%x, axes={axes}, gamma=%g, beta=%b, epsilon=1e-5)", x=x, g=gamma, b=beta), want)


# ---- convolution and pooling: a direct loop over output positions as the reference --------------
def same_pads(size, k, s, d, lower):
    """The definitions' "same": out = ceil(size / s); the odd pixel after (same) or before (same_lower)."""
    total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
    return (total - total // 2, total // 2) if lower else (total // 2, total - total // 2)


def conv_ref(x, w, strides, dilations, pads, groups=1):
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + pads)
    n, k = x.ndim - 2, w.shape[2:]
    out_sizes = [(x.shape[2 + i] - (k[i] - 1) * dilations[i] - 1) // strides[i] + 1 for i in range(n)]
    cg, og = x.shape[1] // groups, w.shape[0] // groups
    y = np.zeros((x.shape[0], w.shape[0], *out_sizes))
    for o in range(w.shape[0]):
        g = o // og
        for pos in itertools.product(*map(range, out_sizes)):
            for kk in itertools.product(*map(range, k)):
                at = tuple(p * s + q * d for p, s, q, d in zip(pos, strides, kk, dilations))
                y[(slice(None), o) + pos] += x[(slice(None), slice(g * cg, (g + 1) * cg)) + at] @ w[(o, slice(None)) + kk]
    return y


CONVS = [   # spatial, kernel, strides, dilations, groups, pad_type, custom pad
    ((7,), (3,), [2], [1], 1, "valid", None),
    ((8,), (4,), [3], [2], 2, "same", None),
    ((6, 7), (3, 2), [2, 1], [1, 2], 1, "same", None),
    ((6, 7), (2, 3), [2, 2], [1, 1], 1, "same_lower", None),
    ((5, 5), (3, 3), [1, 2], [2, 1], 2, "custom", [1, 0, 2, 3]),
    ((4, 5), (3, 3), [1, 1], [1, 1], 4, "valid", None),          # depthwise
    ((4, 5, 3), (2, 3, 2), [1, 2, 1], [1, 1, 2], 1, "same", None),   # 3D
    ((4, 4, 4), (3, 1, 2), [2, 1, 1], [1, 1, 1], 2, "custom", [1, 1, 0, 2, 1, 0]),
]


@pytest.mark.parametrize("spatial, k, strides, dil, groups, pad_type, pad", CONVS)
def test_conv_every_pad_type_group_dilation_and_rank(spatial, k, strides, dil, groups, pad_type, pad):
    x = f32(RNG.normal(size=(2, 4, *spatial)))
    w = f32(RNG.normal(size=(6 if groups != 4 else 4, 4 // groups, *k)))
    b = f32(RNG.normal(size=w.shape[0]))
    if pad_type == "custom":
        pads = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(k))]
    elif pad_type == "valid":
        pads = [(0, 0)] * len(k)
    else:
        pads = [same_pads(*args, pad_type == "same_lower") for args in zip(spatial, k, strides, dil)]
    want = conv_ref(x, w, strides, dil, pads, groups) + b.reshape((1, -1) + (1,) * len(k))
    if pad_type.startswith("same"):
        assert want.shape[2:] == tuple(-(-s // st) for s, st in zip(spatial, strides))
    extra = f", pad={pad}" if pad else ""
    got = run_op(f'conv(x=%x, weight=%w, bias=%b, strides={strides}, dilations={dil}, groups={groups}, '
                 f'pad_type="{pad_type}"{extra})', x=x, w=w, b=b)
    same(got, want.astype(np.float32))


def pool_ref(x, k, strides, pads, ceil_mode, reduce, pad_value, exclude=True):
    """Windows per the definition's output size; a window's padding excluded from an average
    when asked (else counted, though never beyond the padded input's end)."""
    n = len(k)
    out_sizes = []
    for size, kk, s, (b, e) in zip(x.shape[2:], k, strides, pads):
        if ceil_mode:
            o = (size + b + e - kk + s - 1) // s + 1
            if (o - 1) * s >= size + b and (b > 0 or e > 0):
                o -= 1
        else:
            o = (size + b + e - kk) // s + 1
        out_sizes.append(o)
    y = np.zeros(x.shape[:2] + tuple(out_sizes))
    for pos in itertools.product(*map(range, out_sizes)):
        lo = [p * s - b for p, s, (b, _) in zip(pos, strides, pads)]
        hi = [l + kk for l, kk in zip(lo, k)]
        real = tuple(slice(max(l, 0), min(h, size)) for l, h, size in zip(lo, hi, x.shape[2:]))
        win = x[(slice(None), slice(None)) + real].astype(np.float64)
        if reduce == "max":
            y[(slice(None), slice(None)) + pos] = win.max(axis=tuple(range(2, 2 + n)))
        else:
            padded_end = [min(h, size + e) for h, size, (_, e) in zip(hi, x.shape[2:], pads)]
            count = np.prod([r.stop - r.start for r in real]) if exclude else \
                np.prod([pe - l for pe, l in zip(padded_end, lo)])
            y[(slice(None), slice(None)) + pos] = win.sum(axis=tuple(range(2, 2 + n))) / count
    return y


POOLS = [   # spatial, kernel, strides, pad_type, custom pad, ceil_mode
    ((7, 7), (3, 3), [2, 2], "valid", None, False),
    ((7, 6), (3, 3), [2, 2], "valid", None, True),
    ((6, 6), (3, 2), [2, 2], "custom", [1, 1, 0, 1], True),
    ((5, 8), (2, 3), [2, 3], "same", None, False),
    ((5, 8), (3, 3), [2, 3], "same_lower", None, False),
    ((9,), (3,), [3], "custom", [1, 1], True),
    ((4, 5, 6), (2, 2, 3), [2, 2, 2], "custom", [1, 0, 0, 1, 1, 1], False),
]


@pytest.mark.parametrize("spatial, k, strides, pad_type, pad, ceil", POOLS)
@pytest.mark.parametrize("op, exclude", [("max_pool", None), ("avg_pool", True), ("avg_pool", False)])
def test_pooling_with_ceil_mode_and_padding_in_averages(spatial, k, strides, pad_type, pad, ceil, op, exclude):
    x = f32(RNG.normal(size=(1, 2, *spatial)))
    if pad_type == "custom":
        pads = [(pad[2 * i], pad[2 * i + 1]) for i in range(len(k))]
    elif pad_type == "valid":
        pads = [(0, 0)] * len(k)
    else:
        pads = [same_pads(s, kk, st, 1, pad_type == "same_lower") for s, kk, st in zip(spatial, k, strides)]
    want = pool_ref(x, k, strides, pads, ceil, "max" if op == "max_pool" else "avg", None, exclude)
    extra = (f", pad={pad}" if pad else "") + ("" if exclude is None else f", exclude_padding_from_average={exclude}")
    got = run_op(f'{op}(x=%x, kernel_sizes={list(k)}, strides={strides}, pad_type="{pad_type}", '
                 f'ceil_mode={ceil}{extra})', x=x)
    same(got, want.astype(np.float32))


# ---- resampling: the grid points the definition lists for an input [0, 1] ----------------------
@pytest.mark.parametrize("mode, out, grid", [
    ("UNALIGN_CORNERS", 5, [0, 0.1, 0.5, 0.9, 1]),
    ("STRICT_ALIGN_CORNERS", 5, [0, 0.25, 0.5, 0.75, 1]),
    ("ALIGN_CORNERS", 5, [0, 0.25, 0.5, 0.75, 1]),
    ("DEFAULT", 5, [0, 0.4, 0.8, 1, 1]),
    ("OFFSET_CORNERS", 5, [0.1, 0.3, 0.5, 0.7, 0.9]),
    ("UNALIGN_CORNERS", 6, [0, 0, 1 / 3, 2 / 3, 1, 1]),
    ("DEFAULT", 6, [0, 1 / 3, 2 / 3, 1, 1, 1]),
    ("OFFSET_CORNERS", 6, [1 / 12, 3 / 12, 5 / 12, 7 / 12, 9 / 12, 11 / 12]),
    ("ALIGN_CORNERS", 1, [0.5]),           # one output: the middle, unless strict
    ("STRICT_ALIGN_CORNERS", 1, [0.0]),
])
def test_resize_bilinear_samples_the_definitions_grid(mode, out, grid):
    x = f32([[[0.0, 1.0]]])      # (1, 1, 2): linear interpolation of [0, 1] reads back the grid point
    got = run_op(f'resize_bilinear(x=%x, target_size_height=1, target_size_width={out}, sampling_mode="{mode}")', x=x)
    same(got, f32([[grid]]))


def test_resize_bilinear_on_both_dims_and_batch():
    x = f32(RNG.normal(size=(2, 3, 2, 4)))
    got = run_op('resize_bilinear(x=%x, target_size_height=3, target_size_width=2, sampling_mode="STRICT_ALIGN_CORNERS")', x=x)
    want = x[..., [0, 1], :][..., :, [0, 3]]   # corners of a 2-row input onto 3 rows: the middle row averaged
    want = np.stack([want[..., 0, :], (want[..., 0, :] + want[..., 1, :]) / 2, want[..., 1, :]], axis=-2)
    same(got, want)


def test_upsample_nearest_neighbor_repeats_pixels():
    x = f32(RNG.normal(size=(1, 2, 2, 3)))
    got = run_op("upsample_nearest_neighbor(x=%x, scale_factor_height=2, scale_factor_width=3)", x=x)
    same(got, x.repeat(2, axis=-2).repeat(3, axis=-1), exact=True)


# ---- blocks between space, depth and batch ---------------------------------------------------
def dcr_to_space(x, b):
    """depth_to_space by index, as TensorFlow defines it: out[n, c, h*b+i, w*b+j] = x[n, (i*b+j)*C + c, h, w]."""
    n, cb, h, w = x.shape
    c = cb // (b * b)
    y = np.zeros((n, c, h * b, w * b), x.dtype)
    for i, j, k in itertools.product(range(b), range(b), range(c)):
        y[:, k, i::b, j::b] = x[:, (i * b + j) * c + k]
    return y


def crd_to_space(x, b):
    """pixel_shuffle by index, as PyTorch defines it: out[n, c, h*b+i, w*b+j] = x[n, c*b*b + i*b + j, h, w]."""
    n, cb, h, w = x.shape
    c = cb // (b * b)
    y = np.zeros((n, c, h * b, w * b), x.dtype)
    for i, j, k in itertools.product(range(b), range(b), range(c)):
        y[:, k, i::b, j::b] = x[:, k * b * b + i * b + j]
    return y


@pytest.mark.parametrize("b", [2, 3])
def test_depth_to_space_and_pixel_shuffle_orders_and_their_inverses(b):
    x = f32(RNG.normal(size=(2, 2 * b * b, 3, 2)))
    same(run_op(f"depth_to_space(x=%x, block_size={b})", x=x), dcr_to_space(x, b), exact=True)
    same(run_op(f"pixel_shuffle(x=%x, upscale_factor={b})", x=x), crd_to_space(x, b), exact=True)
    space = dcr_to_space(x, b)
    same(run_op(f"space_to_depth(x=%x, block_size={b})", x=space), x, exact=True)
    same(run_op(f"pixel_unshuffle(x=%x, downscale_factor=uint32({b}))", x=crd_to_space(x, b)), x, exact=True)


def test_space_to_batch_and_back_as_the_definitions_example():
    x = f32([[[[1, 2, 3, 4], [5, 6, 7, 8]]], [[[9, 10, 11, 12], [13, 14, 15, 16]]]])
    batched = f32([[[[0, 1, 3]]], [[[0, 9, 11]]], [[[0, 2, 4]]], [[[0, 10, 12]]],
                   [[[0, 5, 7]]], [[[0, 13, 15]]], [[[0, 6, 8]]], [[[0, 14, 16]]]])
    same(run_op("space_to_batch(x=%x, block_shape=[2, 2], paddings=[[0, 0], [2, 0]])", x=x), batched, exact=True)
    same(run_op("batch_to_space(x=%x, block_shape=[2, 2], crops=[[0, 0], [2, 0]])", x=batched), x, exact=True)


# ---- random ops: the named distribution, repeatable under a seed ------------------------------
def test_random_ops_draw_their_distribution_and_repeat_under_a_seed():
    x = f32([0.0])
    normal = run_op("random_normal(shape=[20000], mean=3.0, stddev=2.0, seed=5)", x=x)
    assert normal.shape == (20000,) and abs(normal.mean() - 3) < 0.1 and abs(normal.std() - 2) < 0.1
    same(run_op("random_normal(shape=[20000], mean=3.0, stddev=2.0, seed=5)", x=x), normal, exact=True)
    uniform = run_op("random_uniform(shape=[100, 100], low=-1.0, high=3.0, seed=1)", x=x)
    assert uniform.min() >= -1 and uniform.max() < 3 and abs(uniform.mean() - 1) < 0.05
    bern = run_op("random_bernoulli(shape=[10000], prob=0.25, seed=2)", x=x)
    assert set(np.unique(bern)) == {0.0, 1.0} and abs(bern.mean() - 0.25) < 0.02


@pytest.mark.parametrize("mode, row", [("probs", [0.0, 0.7, 0.3, 0.0]), ("logits", list(np.log([1e-9, 0.7, 0.3, 1e-9])))])
def test_random_categorical_draws_classes_by_their_weights(mode, row):
    x = f32([row, row[::-1]])
    got = run_op(f'random_categorical(x=%x, mode="{mode}", size=5000, seed=3)', x=x)
    assert got.shape == (2, 5000)
    assert set(np.unique(got[0])) <= {1.0, 2.0} and abs((got[0] == 1).mean() - 0.7) < 0.03
    assert set(np.unique(got[1])) <= {1.0, 2.0} and abs((got[1] == 2).mean() - 0.7) < 0.03


# ---- memory: a value is let go after its last use ----------------------------------------------
def test_a_chain_of_ops_holds_only_its_live_values():
    import tracemalloc
    x = np.zeros(1 << 20, np.float32)      # 4 MB; twenty steps would hold 80 MB if every value were kept
    chain = "\n    ".join(f"%v{i + 1} = add(x=%v{i}, y=1.0)" for i in range(20))
    text = f"main[CoreML7](%v0: ({x.size}, fp32)) {{\n  block0() {{\n    {chain}\n  }} -> (%v20)\n}}\n"
    program = miltext.loads(text)
    tracemalloc.start()
    try:
        got = run(program, {"v0": x})["v20"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    same(got, x + 20, exact=True)
    assert peak < 5 * x.nbytes, f"peak {peak / 1e6:.0f} MB for a chain of 4 MB values"


def test_conv_transpose_with_groups_strides_and_output_padding_by_scatter():
    # the definition: each input pixel scatters weight * x into the output at stride steps
    x = f32(RNG.normal(size=(1, 4, 3, 2)))
    w = f32(RNG.normal(size=(4, 3, 2, 3)))      # (C_in, C_out / groups, kh, kw), groups=2 -> 6 outputs
    s, d = (2, 1), (1, 2)
    full = np.zeros((1, 6, (3 - 1) * s[0] + (2 - 1) * d[0] + 1, (2 - 1) * s[1] + (3 - 1) * d[1] + 1))
    for ci, h, wi, i, j in itertools.product(range(4), range(3), range(2), range(2), range(3)):
        g = ci // 2
        full[0, g * 3:(g + 1) * 3, h * s[0] + i * d[0], wi * s[1] + j * d[1]] += x[0, ci, h, wi] * w[ci, :, i, j]
    got = run_op(f'conv_transpose(x=%x, weight=%w, strides={list(s)}, dilations={list(d)}, groups=2, '
                 f'pad_type="custom", pad=[1, 0, 0, 1])', x=x, w=w)
    same(got, full[:, :, 1:, :-1].astype(np.float32))


# ---- shape ops on negative axes and empty tensors --------------------------------------------
@pytest.mark.parametrize("op, want", [
    ("expand_dims(x=%x, axes=[-1, 0])", X3[None, ..., None]),
    ("expand_dims(x=%x, axes=[-2])", X3[:, :, None, :]),
    ("squeeze(x=%e, axes=[-1])", np.zeros((2, 0), np.float32)),
    ("stack(values=(%x, %x), axis=-1)", np.stack([X3, X3], -1)),
    ("stack(values=(%x, %x), axis=-4)", np.stack([X3, X3], 0)),
    ("reverse(x=%x, axes=[-1, 0])", X3[::-1, :, ::-1]),
    ("softmax(x=%e, axis=-2)", np.zeros((2, 0, 1), np.float32)),
    ("transpose(x=%e, perm=[2, 0, 1])", np.zeros((1, 2, 0), np.float32)),
    ("reduce_mean(x=%x, axes=[-3, -1], keep_dims=True)", X3.mean((0, 2), keepdims=True)),
    ("tile(x=%e, reps=[1, 3, 2])", np.zeros((2, 0, 2), np.float32)),
])
def test_shape_ops_on_negative_axes_and_empty_tensors(op, want):
    e = np.zeros((2, 0, 1), np.float32)
    same(run_op(op, x=X3, e=e), want, exact=True)


@pytest.mark.parametrize("axis", [-1, 0])
def test_argsort_and_one_hot_on_negative_axes(axis):
    x = f32([[3, 1, 2], [1, 1, 0]])
    same(run_op(f"argsort(x=%x, axis={axis}, ascending=True)", x=x), np.argsort(x, axis, kind="stable"), exact=True)
    same(run_op(f"argsort(x=%x, axis={axis})", x=x), np.argsort(-x, axis, kind="stable"), exact=True)
    idx = i32([[0, 2], [1, -1]])          # out of range: all zeros, as one_hot defines
    hot = (np.arange(3) == idx[..., None]).astype(np.float32)
    same(run_op(f"one_hot(indices=%i, one_hot_vector_size=3, axis={axis if axis else 0})", i=idx),
         hot if axis == -1 else np.moveaxis(hot, -1, 0), exact=True)


# ---- activations: each definition's formula, at its thresholds and on specials -----------------
ACT_X = f32([-np.inf, -3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, 6.0, 7.0, np.inf, np.nan])


def _sig(x):
    return 1 / (1 + np.exp(-x))


@pytest.mark.parametrize("op, fn", [
    ("relu(x=%x)", lambda x: np.maximum(x, 0)),
    ("relu6(x=%x)", lambda x: np.minimum(np.maximum(x, 0), 6)),
    ("leaky_relu(x=%x, alpha=0.1)", lambda x: np.where(x >= 0, x, 0.1 * x)),
    ("elu(x=%x, alpha=2.0)", lambda x: np.where(x > 0, x, 2 * (np.exp(x) - 1))),
    ("thresholded_relu(x=%x, alpha=1.0)", lambda x: np.where(x >= 1, x, 0)),          # x at alpha stays
    ("clamped_relu(x=%x, alpha=0.5, beta=6.0)", lambda x: np.where(x >= 0, np.minimum(6, x), np.minimum(6, 0.5 * x))),
    ("linear_activation(x=%x, alpha=2.0, beta=-1.0)", lambda x: 2 * x - 1),
    ("scaled_tanh(x=%x, alpha=2.0, beta=0.5)", lambda x: 2 * np.tanh(0.5 * x)),
    ("sigmoid(x=%x)", _sig),
    ("sigmoid_hard(x=%x, alpha=0.25, beta=0.5)", lambda x: np.minimum(np.maximum(0.25 * x + 0.5, 0), 1)),
    ("silu(x=%x)", lambda x: x * _sig(x)),
    ("softplus(x=%x)", lambda x: np.log1p(np.exp(x))),
    ("softsign(x=%x)", lambda x: x / (1 + np.abs(x))),
    ('gelu(x=%x, mode="EXACT")', None),
    ('gelu(x=%x, mode="TANH_APPROXIMATION")', lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    ('gelu(x=%x, mode="SIGMOID_APPROXIMATION")', lambda x: x * _sig(1.702 * x)),
])
def test_activations_follow_their_definitions(op, fn):
    import math
    if fn is None:
        fn = np.vectorize(lambda v: 0.5 * v * (1 + math.erf(v / math.sqrt(2))))
    finite = ACT_X[np.isfinite(ACT_X)]
    with np.errstate(all="ignore"):
        same(run_op(op, x=finite), fn(finite.astype(np.float64)).astype(np.float32))
        got, want = run_op(op, x=ACT_X[~np.isfinite(ACT_X)]), fn(ACT_X[~np.isfinite(ACT_X)].astype(np.float64))
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"NaN where the formula gives {want}"


@pytest.mark.parametrize("rank", [3, 4, 5])
def test_prelu_and_softplus_parametric_take_one_value_per_channel_the_second_dim(rank):
    x = f32(RNG.normal(size=(2, 3) + (2,) * (rank - 2)))
    alpha, beta = f32([0.1, 0.2, 0.3]), f32([1.0, 2.0, 0.5])
    lay = (1, 3) + (1,) * (rank - 2)
    same(run_op("prelu(x=%x, alpha=%a)", x=x, a=alpha), np.where(x >= 0, x, x * alpha.reshape(lay)))
    same(run_op("softplus_parametric(x=%x, alpha=%a, beta=%b)", x=x, a=alpha, b=beta),
         alpha.reshape(lay) * np.log1p(np.exp(beta.reshape(lay) * x.astype(np.float64))))


@pytest.mark.parametrize("align, scale, grid", [
    (False, 2.5, [0, 0.1, 0.5, 0.9, 1]),
    (True, 2.5, [0, 0.25, 0.5, 0.75, 1]),
    (False, 3.0, [0, 0, 1 / 3, 2 / 3, 1, 1]),
    (True, 3.0, [0, 0.2, 0.4, 0.6, 0.8, 1]),
])
def test_upsample_bilinear_samples_the_definitions_grid(align, scale, grid):
    x = f32([[[0.0, 1.0]]])
    got = run_op(f"upsample_bilinear(x=%x, scale_factor_height=1.0, scale_factor_width={scale}, align_corners={align})", x=x)
    same(got, f32([[grid]]))


# ---- scatter: every mode, negative indices and axes, repeated indices accumulate ------------------
COMBINE = {"update": lambda d, u: u, "add": np.add, "sub": np.subtract, "mul": np.multiply,
           "div": np.true_divide, "max": np.maximum, "min": np.minimum}


@pytest.mark.parametrize("mode", COMBINE)
@pytest.mark.parametrize("axis", [0, -1])
def test_scatter_modes_along_negative_axes(mode, axis):
    data = f32(RNG.uniform(1, 2, (3, 4)))
    idx = [2, -1] if mode == "update" else [1, -1, 1]      # repeats only where the order cannot matter
    shape = list(data.shape)
    shape[axis] = len(idx)
    upd = f32(RNG.uniform(1, 2, shape))
    want = np.moveaxis(data.copy(), axis, 0)
    for i, j in enumerate(idx):        # the definition: one update at a time, in index order
        want[j] = COMBINE[mode](want[j], np.moveaxis(upd, axis, 0)[i])
    got = run_op(f'scatter(data=%d, indices=%i, updates=%u, axis={axis}, mode="{mode}")', d=data, i=i32(idx), u=upd)
    same(got, np.moveaxis(want, 0, axis))


@pytest.mark.parametrize("mode", list(COMBINE))
def test_scatter_along_axis_with_negative_and_repeated_indices(mode):
    data = f32(RNG.uniform(1, 2, (2, 4)))
    idx = i32([[0, -1], [-4, 2]] if mode == "update" else [[0, -1], [-4, 0]])   # row 1 names column 0 twice
    upd = f32(RNG.uniform(1, 2, (2, 2)))
    want = data.copy()
    for r, c in itertools.product(range(2), range(2)):
        j = idx[r, c] % 4
        want[r, j] = COMBINE[mode](want[r, j], upd[r, c])
    same(run_op(f'scatter_along_axis(data=%d, indices=%i, updates=%u, axis=-1, mode="{mode}")', d=data, i=idx, u=upd), want)


@pytest.mark.parametrize("lower, upper", [(-1, 0), (0, -1), (1, 2), (-1, -1), (0, 0)])
def test_band_part_keeps_the_band(lower, upper):
    x = f32(RNG.normal(size=(2, 4, 5)))
    r, c = np.indices((4, 5))
    keep = ((lower < 0) | (r - c <= lower)) & ((upper < 0) | (c - r <= upper))
    same(run_op(f"band_part(x=%x, lower={lower}, upper={upper})", x=x), np.where(keep, x, 0), exact=True)


def test_exclusive_cumsum_past_an_inf_and_over_an_empty_axis():
    x = f32([[np.inf, 1.0, 2.0], [1.0, -np.inf, 3.0]])
    same(run_op("cumsum(x=%x, axis=-1, exclusive=True)", x=x), f32([[0, np.inf, np.inf], [0, 1, -np.inf]]), exact=True)
    same(run_op("cumsum(x=%x, axis=-1, exclusive=True, reverse=True)", x=x), f32([[3, 2, 0], [-np.inf, 3, 0]]), exact=True)
    e = np.zeros((2, 0), np.float32)
    same(run_op("cumsum(x=%e, axis=-1, exclusive=True)", e=e), e, exact=True)


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 2, 3, 4), (2, 1, 2, 3, 2)])
def test_l2_norm_over_the_last_three_dims(shape):
    x = f32(RNG.normal(size=shape))
    flat = x.reshape(-1, int(np.prod(shape[-3:]))).astype(np.float64)       # leading dims are batch
    want = flat / np.sqrt((flat * flat).sum(-1, keepdims=True) + 1e-6)
    same(run_op("l2_norm(x=%x)", x=x), want.reshape(shape))


@pytest.mark.parametrize("rank", [3, 4, 5])
def test_batch_and_instance_norm_per_channel_on_each_rank(rank):
    x = f32(RNG.normal(size=(2, 3) + (3,) * (rank - 2)))
    lay = (1, 3) + (1,) * (rank - 2)
    mean, var, gamma, beta = (f32(RNG.uniform(0.5, 1.5, 3)) for _ in range(4))
    xd = x.astype(np.float64)
    want = (xd - mean.reshape(lay)) / np.sqrt(var.reshape(lay) + 1e-3) * gamma.reshape(lay) + beta.reshape(lay)
    same(run_op("batch_norm(x=%x, mean=%m, variance=%v, gamma=%g, beta=%b, epsilon=1e-3)", x=x, m=mean, v=var, g=gamma, b=beta), want)
    spatial = tuple(range(2, rank))
    want = (xd - xd.mean(spatial, keepdims=True)) / np.sqrt(xd.var(spatial, keepdims=True) + 1e-5) * gamma.reshape(lay) + beta.reshape(lay)
    same(run_op("instance_norm(x=%x, gamma=%g, beta=%b)", x=x, g=gamma, b=beta), want)


# ---- linear algebra: NumPy's matmul broadcasting, rank-1 operands, transposes, empty K ----------
@pytest.mark.parametrize("xs, ys, tx, ty", [
    ((2, 1, 3, 4), (5, 4, 2), False, False),       # batch dims broadcast
    ((4,), (2, 4, 3), False, False),               # a rank-1 x is a row
    ((2, 3, 4), (4,), False, False),               # a rank-1 y is a column
    ((4, 3), (2, 5, 4), True, True),
    ((3, 0), (0, 2), False, False),                # an empty inner dim sums to zero
    ((1, 3, 4), (1, 2, 4), False, True),
])
def test_matmul_broadcasts_and_transposes(xs, ys, tx, ty):
    x, y = f32(RNG.normal(size=xs)), f32(RNG.normal(size=ys))
    xt = np.swapaxes(x, -1, -2) if tx else x
    yt = np.swapaxes(y, -1, -2) if ty else y
    same(run_op(f"matmul(x=%x, y=%y, transpose_x={tx}, transpose_y={ty})", x=x, y=y),
         np.matmul(xt.astype(np.float64), yt))


def test_linear_on_rank_1_and_batched_inputs():
    w, b = f32(RNG.normal(size=(3, 4))), f32(RNG.normal(size=3))
    for shape in [(4,), (2, 5, 4), (0, 4)]:
        x = f32(RNG.normal(size=shape))
        same(run_op("linear(x=%x, weight=%w, bias=%b)", x=x, w=w, b=b), x.astype(np.float64) @ w.T + b)


def test_fp16_matmul_accumulates_wider_than_fp16():
    # 4096 ones: summed in fp16 one at a time the total would stop at 2048 (2048 + 1 rounds to 2048)
    x = np.ones((1, 4096), np.float16)
    got = run_op("matmul(x=%x, y=%y)", x=x, y=np.ones((4096, 1), np.float16))
    assert got.dtype == np.float16 and got[0, 0] == 4096


@pytest.mark.parametrize("axis", [1, -1, -3])
def test_sliding_windows_on_any_axis(axis):
    x = f32(RNG.normal(size=(2, 3, 7)))
    ax = axis % 3
    starts = range(0, x.shape[ax] - 2 + 1, 2)          # size 2, stride 2
    want = np.stack([np.take(x, [s, s + 1], axis=ax) for s in starts], axis=ax)
    same(run_op(f"sliding_windows(x=%x, axis={axis}, size=2, stride=2)", x=x), want, exact=True)


@pytest.mark.parametrize("shape, want", [([0, -1, 2], (2, 6, 2)), ([0, 0, -1], (2, 3, 4)), ([-1, 0, 2], (4, 3, 2))])
def test_reshape_zero_keeps_the_input_dim(shape, want):
    same(run_op(f"reshape(x=%x, shape={shape})", x=X3), X3.reshape(want), exact=True)


def test_reshape_zero_with_another_rank_is_an_error():
    from miltext.interpreter import RunError
    with pytest.raises(RunError, match="rank"):
        run_op("reshape(x=%x, shape=[0, -1])", x=X3)


def test_gather_nd_with_batch_dims():
    idx = i32([[[2], [-1]], [[0], [1]]])           # per batch: rows of x[b]
    want = np.stack([X3[b][idx[b, :, 0]] for b in range(2)])
    same(run_op("gather_nd(x=%x, indices=%i, batch_dims=1)", x=X3, i=idx), want, exact=True)


# ---- crop_resize: a box's corners land on the patch's corners (ALIGN_CORNERS) -------------------
def test_crop_resize_boxes_land_on_the_patch_corners():
    x = f32(np.arange(2 * 1 * 5 * 6).reshape(2, 1, 5, 6))       # linear in h and w: bilinear is exact
    boxes = f32([[1.0, 2.0, 3.0, 5.0], [0.0, 0.0, 4.0, 5.0]])
    got = run_op('crop_resize(x=%x, boxes=%b, box_indices=%i, target_height=3, target_width=4, '
                 'sampling_mode="ALIGN_CORNERS")', x=x, b=boxes, i=i32([1, 0]))
    def patch(img, h0, w0, h1, w1):
        hs, ws = np.linspace(h0, h1, 3), np.linspace(w0, w1, 4)
        return (img * 30 + hs[:, None] * 6 + ws[None, :])[None]
    same(got, np.stack([patch(1, 1, 2, 3, 5), patch(0, 0, 0, 4, 5)]))


def test_crop_resize_normalized_center_boxes_and_padding_outside():
    x = f32(np.arange(4 * 4).reshape(1, 1, 4, 4))
    boxes = f32([[0.5, 0.5, 1.0, 2.0]])       # center (0.5, 0.5) normalized: (1.5, 1.5), size (3, 6): w runs past the image
    got = run_op('crop_resize(x=%x, boxes=%b, target_height=2, target_width=3, normalized_coordinates=True, '
                 'box_coordinate_mode="CENTER_SIZE_HEIGHT_FIRST", sampling_mode="STRICT_ALIGN_CORNERS", pad_value=-1.0)',
                 x=x, b=boxes)
    hs, ws = np.array([0.0, 3.0]), np.array([-1.5, 1.5, 4.5])
    want = np.where((ws < 0) | (ws > 3), -1.0, hs[:, None] * 4 + ws[None, :])
    same(got, want[None, None])


def test_crop_resize_roi_of_ios16_with_and_without_an_image_index():
    x = f32(np.arange(2 * 1 * 4 * 4).reshape(2, 1, 4, 4))
    def crop(op, roi):
        text = (f"main[CoreML6](%x: (2, 1, 4, 4, fp32), %r: ({', '.join(map(str, roi.shape))}, fp32)) {{\n  block0() {{\n"
                f"    %y = {op}\n  }} -> (%y)\n}}\n")
        return run(miltext.loads(text), {"x": x, "r": roi})["y"]
    op = 'crop_resize(x=%x, roi=%r, target_height=2, target_width=2, sampling_mode="ALIGN_CORNERS")'
    with_index = crop(op, f32([1, 0, 0, 2, 2]).reshape(1, 1, 5, 1, 1))        # image 1, box (0,0)-(2,2)
    same(with_index, (16 + np.array([[0, 2], [8, 10]], np.float32))[None, None, None])
    every_image = crop(op, f32([0, 0, 2, 2]).reshape(1, 1, 4, 1, 1))           # the box on both images
    same(every_image, np.stack([b * 16 + np.array([[0, 2], [8, 10]], np.float32) for b in range(2)])[None, :, None])


# ---- scatter_nd, non_maximum_suppression, resize -------------------------------------------------

def test_scatter_nd_adds_repeated_rows_and_takes_negative_indices():
    data = f32(np.zeros((3, 4)))
    idx = i32([[0, 1], [-1, 3], [0, 1]])
    want = np.zeros((3, 4))
    want[0, 1], want[2, 3] = 1 + 3, 2
    same(run_op("scatter_nd(data=%d, indices=%i, updates=%u)", d=data, i=idx, u=f32([1, 2, 3])), want)


def test_scatter_nd_updates_whole_slices():
    data = f32(np.arange(12).reshape(3, 4))
    want = np.arange(12, dtype=np.float32).reshape(3, 4)
    want[1] = [9, 9, 9, 9]
    got = run_op('scatter_nd(data=%d, indices=%i, updates=%u, mode="update")', d=data, i=i32([[1]]), u=f32([[9] * 4]))
    same(got, want, exact=True)


# Boxes as (x_center, y_center, width, height): the first two overlap (IoU 0.9/1.1 > 0.5).
NMS_BOXES = f32([[[0, 0, 2, 2], [0.1, 0, 2, 2], [5, 5, 2, 2]]])


def _nms15(scores, per_class=False, score_threshold=0.1):
    """iOS15's form (typed here: CoreML7 functions, which run_op writes, type iOS17's)."""
    k = len(scores[0][0])
    line = (f"%b: (1, 3, 4, fp32), %s: (1, 3, {k}, fp32), %n: (1, 3, int32), %c: (1, int32) = "
            "non_maximum_suppression(boxes=%x, scores=%y, iou_threshold=0.5, "
            f"score_threshold={score_threshold}, max_boxes=3, per_class_suppression={per_class})")
    return run_op(line, outputs=("b", "s", "n", "c"), x=NMS_BOXES, y=f32(scores))


def test_nms_keeps_the_best_of_overlapping_boxes_and_pads_the_rest():
    boxes, scores, indices, count = _nms15([[[0.9], [0.8], [0.7]]])
    same(indices, [[0, 2, -1]], exact=True)
    same(count, [2], exact=True)
    same(boxes, [[[0, 0, 2, 2], [5, 5, 2, 2], [0, 0, 0, 0]]], exact=True)
    same(scores, [[[0.9], [0.7], [0]]])


def test_nms_drops_boxes_under_the_score_threshold():
    _, _, indices, count = _nms15([[[0.9], [0.8], [0.05]]])
    same(indices, [[0, -1, -1]], exact=True)
    same(count, [1], exact=True)


def test_nms_per_class_suppression_lets_boxes_of_other_classes_overlap():
    scores = [[[0.9, 0.0], [0.0, 0.8], [0.7, 0.0]]]   # the overlapping pair are of two classes
    assert _nms15(scores)[2].tolist() == [[0, 2, -1]]
    assert _nms15(scores, per_class=True)[2].tolist() == [[0, 1, 2]]


def test_nms_of_ios17_takes_boxes_along_the_last_axis_and_has_no_count():
    line = "%b, %s, %n = non_maximum_suppression(boxes=%x, scores=%y, iou_threshold=0.5, max_boxes=2)"
    boxes, scores, indices = run_op(line, outputs=("b", "s", "n"), x=NMS_BOXES.transpose(0, 2, 1),
                                    y=f32([[[0.7, 0.8, 0.9]]]))
    same(indices, [[2, 1]], exact=True)   # the best first; box 0 overlaps box 1, kept before it
    same(boxes, NMS_BOXES[:, [2, 1]].transpose(0, 2, 1), exact=True)
    same(scores, [[[0.9, 0.8]]])


def test_resize_linear_with_aligned_corners_interpolates_between_the_corners():
    x = f32([[[[0, 1], [2, 3]]]])
    got = run_op('resize(x=%x, shape=%s, resized_dims=uint32(2), sampling_mode="ALIGN_CORNERS")',
                 x=x, s=i32([4, 4]))
    # corners on corners: output (i, j) reads input (i/3, j/3), and the input is 2y + x
    same(got, np.add.outer(2 * np.arange(4) / 3, np.arange(4) / 3)[None, None])


def test_resize_nearest_repeats_and_a_zero_keeps_a_dim():
    x = f32(np.arange(6).reshape(1, 2, 3))
    got = run_op('resize(x=%x, shape=%s, resized_dims=uint32(2), interpolation_mode="NEAREST_NEIGHBOR")',
                 x=x, s=i32([0, 6]))
    same(got, np.repeat(np.arange(6).reshape(1, 2, 3), 2, axis=2), exact=True)


# ---- resample and affine: the definition's 1-D examples of each padding mode ---------------------

PADDED = {"constant": [0, 0, 0, 1, 2, 3, 0, 0, 0], "border": [1, 1, 1, 1, 2, 3, 3, 3, 3],
          "reflection": [2, 3, 2, 1, 2, 3, 2, 1, 2], "symmetric": [3, 2, 1, 1, 2, 3, 3, 2, 1]}


def _resample(x, coords, sampling="bilinear", padding="constant", mode="unnormalized", align=True):
    return run_op(f'resample(x=%x, coordinates=%c, sampling_mode="{sampling}", padding_mode="{padding}", '
                  f'padding_value=0.0, coordinates_mode="{mode}", align_corners={align})', x=x, c=coords)


@pytest.mark.parametrize("padding", PADDED)
@pytest.mark.parametrize("sampling", ["bilinear", "nearest"])
def test_resample_pads_as_the_definition_shows(padding, sampling):
    x = f32([[[[1, 2, 3]]]])                                       # one row: |1, 2, 3|
    coords = f32([[[[p, 0] for p in range(-3, 6)]]])              # x = -3 ... 5, y = 0
    same(_resample(x, coords, sampling, padding), [[[PADDED[padding]]]], exact=True)


def test_resample_normalized_coordinates_reach_the_corner_pixels_and_interpolate():
    x = f32(np.arange(4).reshape(1, 1, 2, 2))                    # [[0, 1], [2, 3]]: 2y + x
    aligned = _resample(x, f32([[[[-1, -1], [1, 1], [0, 0]]]]), mode="normalized_minus_one_to_one")
    same(aligned, [[[[0, 3, 1.5]]]])
    # not aligned: -1 and 1 are the image's outer edges, half a pixel beyond the corner centers
    same(_resample(x, f32([[[[-0.5, -0.5], [0.5, 0.5]]]]), mode="normalized_minus_one_to_one", align=False),
         [[[[0, 3]]]])
    same(_resample(x, f32([[[[0, 0], [1, 0.5]]]]), mode="normalized_zero_to_one"), [[[[0, 2]]]])


def test_affine_identity_upsamples_as_aligned_linear_resizing():
    x = f32([[[[0, 1], [2, 3]]]])
    got = run_op('affine(x=%x, transform_matrix=%t, output_height=4, output_width=4, sampling_mode="bilinear", '
                 'padding_mode="constant", padding_value=0.0, coordinates_mode="normalized_minus_one_to_one", '
                 'align_corners=true)', x=x, t=f32([[1, 0, 0, 0, 1, 0]]))
    same(got, np.add.outer(2 * np.arange(4) / 3, np.arange(4) / 3)[None, None])


def test_affine_flip_reads_the_mirror_image():
    x = f32(np.arange(6).reshape(1, 1, 2, 3))
    got = run_op('affine(x=%x, transform_matrix=%t, output_height=2, output_width=3, sampling_mode="bilinear", '
                 'padding_mode="constant", padding_value=0.0, coordinates_mode="normalized_minus_one_to_one", '
                 'align_corners=true)', x=x, t=f32([[-1, 0, 0, 0, 1, 0]]))
    same(got, x[..., ::-1])


# ---- compressed weights: the iOS18 definitions' own examples --------------------------------------

def _consts(line: str, outputs=("w",), opset="CoreML8"):
    text = f"main[{opset}]() {{\n  block0() {{\n    {line}\n  }} -> ({', '.join('%' + o for o in outputs)})\n}}\n"
    got = run(miltext.loads(text), {})
    return got[outputs[0]] if len(outputs) == 1 else tuple(got[o] for o in outputs)


INDICES = "(2, 2, 2, uint1)([[[0, 0], [1, 0]], [[1, 1], [0, 0]]])"
PALETTE = "(1, 1, 1, 2, 3, fp32)([[[[[1, 2, 3], [4, 5, 6]]]]])"    # the vectors a = 1 2 3, b = 4 5 6


def test_a_palette_of_vectors_fills_along_the_vector_axis():
    a, b = [1, 2, 3], [4, 5, 6]
    down = _consts(f"%w = constexpr_lut_to_dense(indices={INDICES}, lut={PALETTE}, vector_axis=1)")
    want = np.array([[[x, y] for x, y in zip(a + b, a + a)], [[x, y] for x, y in zip(b + a, b + a)]])
    same(down, want, exact=True)
    across = _consts(f"%w = constexpr_lut_to_dense(indices={INDICES}, lut={PALETTE}, vector_axis=-1)")
    same(across, [[a + a, b + a], [b + b, a + a]], exact=True)


SPARSE_MASK = [[1, 1, 0, 0, 0, 0], [1, 1, 0, 0, 0, 1], [0, 1, 1, 0, 1, 0], [0, 0, 0, 1, 0, 0]]
SPARSE_INDICES = "(9, uint1)([0, 1, 1, 0, 1, 1, 0, 0, 1])"


def test_a_sparse_palette_of_scalars_looks_up_each_nonzero():
    mask, values = _consts(
        f"%m, %d = constexpr_lut_to_sparse(indices_mask=(4, 6, uint1)({SPARSE_MASK}), "
        f"indices_nonzero_data={SPARSE_INDICES}, lut=(1, 1, 2, 1, fp16)([[[[2.0], [3.0]]]]))", outputs=("m", "d"))
    same(mask, SPARSE_MASK, exact=True)
    same(values, [2, 3, 3, 2, 3, 3, 2, 2, 3], exact=True)


def test_a_sparse_palette_of_vectors_repeats_mask_and_values_along_the_vector_axis():
    """The iOS18 definition's example: each nonzero becomes two rows (vector_axis 0)."""
    mask, values = _consts(
        f"%m, %d = constexpr_lut_to_sparse(indices_mask=(4, 6, uint1)({SPARSE_MASK}), "
        f"indices_nonzero_data={SPARSE_INDICES}, lut=(1, 1, 2, 2, fp16)([[[[2.0, 2.0], [3.0, 3.0]]]]), "
        "vector_axis=0)", outputs=("m", "d"))
    same(mask, np.repeat(SPARSE_MASK, 2, axis=0), exact=True)
    dense = [[2, 3, 0, 0, 0, 0], [2, 3, 0, 0, 0, 0], [3, 2, 0, 0, 0, 3], [3, 2, 0, 0, 0, 3],
             [0, 3, 2, 0, 2, 0], [0, 3, 2, 0, 2, 0], [0, 0, 0, 3, 0, 0], [0, 0, 0, 3, 0, 0]]
    same(values, [v for row in dense for v in row if v], exact=True)
    # different values within a vector land in order along the axis: (a, b) down a column
    mask, values = _consts(
        "%m, %d = constexpr_lut_to_sparse(indices_mask=(1, 2, uint1)([[0, 1]]), "
        "indices_nonzero_data=(1, uint1)([1]), lut=(1, 1, 2, 2, fp32)([[[[0.0, 0.0], [7.0, 8.0]]]]), "
        "vector_axis=-1)", outputs=("m", "d"))
    same(mask, [[0, 0, 1, 1]], exact=True)
    same(values, [7, 8], exact=True)


def test_sparse_blockwise_shift_scale_dequantizes_each_nonzero_by_its_column():
    mask = [[1, 1, 0, 0], [1, 1, 1, 0], [0, 0, 1, 1], [1, 1, 0, 0]]
    got_mask, values = _consts(
        f"%m, %d = constexpr_sparse_blockwise_shift_scale(data_mask=(4, 4, uint1)({mask}), "
        "nonzero_data=(9, int8)([10, 11, 3, 4, 5, 6, 7, 8, 9]), scale=(1, 4, fp32)([[0.1, 0.2, 0.3, 0.4]]), "
        "offset=(1, 4, int8)([[1, 2, 3, 4]]))", outputs=("m", "d"))
    same(got_mask, mask, exact=True)
    same(values, [0.9, 1.8, 0.2, 0.4, 0.6, 0.9, 1.2, 0.7, 1.4])


def test_conv_quantized_convolves_with_the_dequantized_weight():
    x = f32(RNG.normal(size=(1, 2, 3, 3)))
    q = np.array([[[[3]], [[5]]], [[[0]], [[2]]]], np.uint8)          # (C_out 2, C_in 2, 1, 1)
    scale, bias = np.array([0.5, 2.0]), np.array([-1.0, 1.0])        # per output channel
    w = q[:, :, 0, 0] * scale[:, None] + bias[:, None]                # 1x1: y = w @ x at each pixel
    line = (f'%y = conv_quantized(x=%x, weight=(2, 2, 1, 1, uint8)({q.tolist()}), quantization_type="linear", '
            'quant_scale=fp32([0.5, 2.0]), quant_bias=fp32([-1.0, 1.0]))')
    same(run_op(line, x=x), np.einsum("oc,nchw->nohw", w, x))


def test_conv_quantized_with_a_table_says_why_it_does_not_run():
    from miltext.interpreter import RunError
    line = ('%y = conv_quantized(x=%x, weight=(1, 1, 1, 1, uint8)([[[[1]]]]), quantization_type="lut", '
            'quant_scale=fp32([0.5]), quant_bias=fp32([0.0]))')
    with pytest.raises(RunError, match="conv_quantized.*'lut'.*scale and a bias"):
        run_op(line, x=f32(np.ones((1, 1, 1, 1))))


# resize_bilinear's grids (its Notes) with the box [1, 4] of a row whose values are their x:
# the samples are the grid's points, from the box's start.
CROP_GRIDS = {"DEFAULT": [0, 2], "OFFSET_CORNERS": [0.75, 2.25], "UNALIGN_CORNERS": [0.5, 2.5],
              "ALIGN_CORNERS": [0, 3], "STRICT_ALIGN_CORNERS": [0, 3]}


@pytest.mark.parametrize("mode", CROP_GRIDS)
def test_crop_resize_samples_a_box_on_each_sampling_modes_grid(mode):
    x = f32(np.tile(np.arange(6), (2, 1))[None, None])          # (1, 1, 2, 6): x's value is its w
    got = run_op(f'crop_resize(x=%x, boxes=%b, target_height=1, target_width=2, sampling_mode="{mode}")',
                 x=x, b=f32([[0, 1, 0, 4]]))
    same(got, (1 + np.array(CROP_GRIDS[mode], np.float64))[None, None, None, :])
