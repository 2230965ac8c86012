"""Elementwise ops: binary ones broadcast as NumPy does; unary ones, with the epsilon and
alpha/beta inputs their definitions give."""
from __future__ import annotations

import math

import numpy as np

from .. import fusion, parallel
from ..errors import RunError
from ..fast_kernels import usable
from ..limits import BIG
from ..registry import kernel

_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}


def operands(a, *keys):
    """The inputs `keys` as arrays, once their broadcast result is known to fit in --max-memory."""
    values = [a(k) for k in keys]
    itemsize, same, product = 8, True, 1        # 8: a kernel may compute in float64
    shape = None
    for i, v in enumerate(values):
        if type(v) is not np.ndarray:
            values[i] = v = np.asarray(v)
        if v.itemsize > itemsize:
            itemsize = v.itemsize
        if shape is None:
            shape = v.shape
        elif v.shape != shape:
            same = False
        product *= v.size
    need = (values[0].size if same else _broadcast_bound(values, product)) * itemsize
    if need >= BIG or need > a.evaluator.limits.max_memory:     # else allow() would pass
        a.allow(np.broadcast_shapes(*(v.shape for v in values)), itemsize)
    return values


def _broadcast_bound(values, product: int) -> int:
    """At least the elements of the broadcast of values of more than one shape: the largest's
    size when each shape ends the largest one (a bias, a mask, a scalar), else `product`, the
    product of their sizes."""
    big = values[0]
    for v in values:
        if v.size > big.size:
            big = v
    for v in values:
        if v.ndim > big.ndim or big.shape[big.ndim - v.ndim:] != v.shape:
            return product
    return big.size


def _binary(fn):
    def run(a):      # the evaluator runs every kernel with NumPy's warnings off
        x, y = operands(a, "x", "y")
        if not a.relu:      # a replay computes the op alone, not a relu folded in (fusion.py)
            a.replayable(fn, "x", "y")
        found = _in_c(a, fn, x, y)
        if found is not None:
            native, big, small = found
            out = a.spare("x" if big is x else "y", big, big.shape, big.dtype)
            if out is None and small.shape == big.shape:
                out = a.spare("y" if big is x else "x", small, big.shape, big.dtype)
            out = np.empty_like(big) if out is None else out
            parallel.claimed(native, lambda counter: native.binary(big, small, out, counter, _IN_C[fn], a.relu),
                             parallel.threads(big.size, _C_SHARE), 0)
            return out
        if x.ndim and x.shape == y.shape and x.dtype == y.dtype and fn in _IN_PLACE:
            out = a.spare("x", x, x.shape, x.dtype)
            if out is None:
                out = a.spare("y", y, y.shape, y.dtype)
            share = parallel.threads(x.size, _SHARE)
            if share > 1 and x.flags.c_contiguous and y.flags.c_contiguous:
                out = parallel.chunks(fn, (x, y), np.empty_like(x) if out is None else out, share)
            elif out is not None:
                out = fn(x, y, out=out)
            else:
                out = fn(x, y)
            return fusion.relu(out) if a.relu else out
        out = fn(x, y)
        return np.maximum(out, 0) if a.relu else out
    return run


_IN_PLACE = {np.add, np.subtract, np.multiply, np.maximum, np.minimum}   # same dtype in and out
_SHARE = 1 << 18     # elements each thread must have for an op to be shared (a hand-off costs ~50 us)
# fp32 ops the C kernel runs (its op numbers), shared from _C_SHARE elements a thread: a worker
# spinning between pieces joins the call in microseconds
_IN_C = {np.add: 0, np.subtract: 1, np.multiply: 2}
_C_SHARE = 1 << 15


def _in_c(a, fn, x, y):
    """(the C kernels, the operand of the result's shape, the other) for an fp32 add, sub or
    mul whose smaller operand repeats along the other as it is (the same shape, one value, or
    the other's trailing dims: a bias, a mask); else None. x - y takes y as the smaller."""
    if fn not in _IN_C or type(x) is not np.ndarray or type(y) is not np.ndarray:
        return None
    big, small = (x, y) if x.size >= y.size or fn is np.subtract else (y, x)
    native = usable(a, big) if big.size >= _C_SHARE else None       # smaller: NumPy's own loop is as quick
    if (native is None or small.dtype != np.float32 or not small.size or not small.flags.c_contiguous
            or small.ndim > big.ndim):
        return None
    lead = next((i for i, d in enumerate(small.shape) if d != 1), small.ndim)
    trailing = small.shape[lead:]
    if trailing and big.shape[big.ndim - len(trailing):] != trailing:
        return None
    return native, big, small


for _name, _fn in _BINARY.items():
    kernel(_name)(_binary(_fn))


@kernel("real_div")
def real_div(a):
    x, y = operands(a, "x", "y")
    with np.errstate(all="ignore"):
        out = np.true_divide(x, y)
    return out if x.dtype.kind == "f" else out.astype(a.out_dtype() or out.dtype)


@kernel("floor_div")
def floor_div(a):
    x, y = operands(a, "x", "y")
    with np.errstate(all="ignore"):
        return np.floor_divide(x, y)


@kernel("mod")
def mod(a):
    x, y = operands(a, "x", "y")
    with np.errstate(all="ignore"):
        return np.mod(x, y)


@kernel("pow")
def power(a):
    x, y = operands(a, "x", "y")
    with np.errstate(all="ignore"):
        return np.power(x, y)


_UNARY = {
    "abs": np.abs, "acos": np.arccos, "asin": np.arcsin, "atan": np.arctan, "atanh": np.arctanh,
    "ceil": np.ceil, "cos": np.cos, "cosh": np.cosh, "exp": np.exp, "exp2": np.exp2,
    "floor": np.floor, "sign": np.sign, "sin": np.sin, "sinh": np.sinh, "sqrt": np.sqrt,
    "square": np.square, "tan": np.tan, "tanh": np.tanh, "logical_not": np.logical_not,
    "round": np.round,   # half to even, as the op definition says (numpy's rule)
}


def _unary(fn):
    def run(a):
        x = np.asarray(a("x"))
        a.replayable(fn, "x")
        share = parallel.threads(x.size, _SHARE)
        if share > 1 and x.flags.c_contiguous and x.dtype.kind == "f" and fn is not np.logical_not:
            return parallel.chunks(fn, (x,), np.empty_like(x), share)     # floats in, floats out
        return fn(x)
    return run


for _name, _fn in _UNARY.items():
    kernel(_name)(_unary(_fn))


_exact_erf = np.vectorize(math.erf, otypes=[np.float64])
# erfc(z) for z >= 0 as t * exp(-z^2 + P(t)), t = 1 / (1 + z / 2): a Chebyshev fit whose
# relative error is below 1.3e-7 for every z (Numerical Recipes' erfcc)
_ERFC = (-1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807,
         -1.13520398, 1.48851587, -0.82215223, 0.17087277)
# 1/2, 1 and the coefficients as arrays of 0 dims in each working dtype: NumPy takes such an
# operand in half the time of a Python float (which it converts at every call)
_ERFC_AS = {np.dtype(t): (np.array(0.5, t), np.array(1.0, t), tuple(np.array(c, t) for c in _ERFC))
            for t in (np.float32, np.float64)}
# erf's Maclaurin series, x * sum(c_n x^2n), for |x| < 0.5, where 1 - erfc would lose digits
_ERF_SERIES = tuple((2 / math.sqrt(math.pi)) * (-1) ** n / (math.factorial(n) * (2 * n + 1)) for n in range(9))


def _erfc_of_abs(z):
    """erfc(z) for z >= 0 (float32 or float64, computed in z's dtype)."""
    half, one, coefficients = _ERFC_AS[z.dtype]
    t = z * half                      # 1 / (1 + z / 2), in place
    t += one
    np.reciprocal(t, out=t)
    poly = t * coefficients[-1]
    for c in coefficients[-2:0:-1]:
        poly += c
        poly *= t
    poly += coefficients[0]
    poly -= z * z
    np.exp(poly, out=poly)
    poly *= t
    return poly


def _working(x):
    """x in the dtype its erf is computed in: float64 (exactly, by math.erf) for fp64 input or
    a few elements, else float32, vectorized to within a few float32 ulps."""
    x = np.asarray(x)
    exact = x.dtype == np.float64 or x.size < 64
    return x.astype(np.float64 if exact else np.float32, copy=False), exact


def erf_of(x, scale: float = 1.0):
    """erf(x * scale), the product in the working dtype (no Python loop over elements for
    arrays of floats up to fp32)."""
    x, exact = _working(x)
    if scale != 1.0:
        x = x * x.dtype.type(scale)
    if exact:
        return _exact_erf(x)
    z = np.abs(x)
    out = _erfc_of_abs(z)
    np.subtract(1, out, out=out)
    np.copysign(out, x, out=out)
    small = z < 0.5                 # 1 - erfc would lose digits: erf's series
    if small.any():
        xs = x[small]
        x2 = xs * xs
        series = np.full_like(xs, _ERF_SERIES[-1])
        for c in _ERF_SERIES[-2::-1]:
            series *= x2
            series += c
        out[small] = xs * series
    return out


_GELU_SCALE = np.array(1 / math.sqrt(2), np.float32)
_CHUNK = 1 << 14     # elements a whole-array formula is taken over at once: its passes stay in cache


def gelu_exact(x):
    """x * Phi(x) = x / 2 * erfc(-x / sqrt 2): erfc itself on the negative side, so the small
    tail of negative inputs keeps its digits."""
    xw, exact = _working(x)
    if exact:
        return 0.5 * xw * (1 + _exact_erf(xw / math.sqrt(2)))
    flat = xw.reshape(-1)
    out = np.empty_like(flat)
    half, one, _ = _ERFC_AS[flat.dtype]
    for at in range(0, flat.size, _CHUNK):
        part = flat[at:at + _CHUNK]
        z = np.abs(part)
        z *= _GELU_SCALE
        r = _erfc_of_abs(z)
        # 2 - r where part >= 0, r elsewhere, blended by arithmetic (np.where is slower)
        up = np.subtract(one, r, out=z)
        up *= part >= 0
        up += up
        r += up
        r *= part
        np.multiply(r, half, out=out[at:at + _CHUNK])
    return out.reshape(xw.shape)


@kernel("erf")
def erf(a):
    x = np.asarray(a("x"))
    return erf_of(x).astype(x.dtype, copy=False)


@kernel("log")
def log(a):
    x = np.asarray(a("x"))
    with np.errstate(all="ignore"):
        return np.log(x + np.asarray(a.scalar("epsilon", 1e-45), x.dtype))


@kernel("inverse")
def inverse(a):
    x = np.asarray(a("x"))
    with np.errstate(all="ignore"):
        return np.reciprocal(x + np.asarray(a.scalar("epsilon", 1e-4), x.dtype))


@kernel("rsqrt")
def rsqrt(a):
    x = np.asarray(a("x"))
    with np.errstate(all="ignore"):
        return 1 / np.sqrt(x + np.asarray(a.scalar("epsilon", 1e-12), x.dtype))


@kernel("clip")
def clip(a):
    x = np.asarray(a("x"))
    return np.clip(x, a.scalar("alpha"), a.scalar("beta")).astype(x.dtype)


@kernel("threshold")
def threshold(a):
    x = np.asarray(a("x"))
    alpha = a.scalar("alpha")
    if x.dtype.kind in "iu":    # max(x, alpha) truncated is max(x, alpha truncated), held in range
        if alpha != alpha:
            raise RunError("alpha is NaN, which no integer can be compared with")
        info = np.iinfo(x.dtype)
        alpha = info.max if alpha >= info.max else info.min if alpha <= info.min else int(alpha)
    return np.maximum(x, np.asarray(alpha, x.dtype))


@kernel("select")
def select(a):
    return a.replayable(_select, "cond", "a", "b")(*operands(a, "cond", "a", "b"))


def _select(cond, x, y):
    return np.where(cond.astype(bool), x, y)


@kernel("cast")
def cast(a):
    from ... import dtypes
    x = np.asarray(a("x"))
    want = dtypes.by_name(str(a.scalar("dtype"))).numpy
    if want.kind in "iu" and x.dtype.kind == "f":
        x = np.trunc(x)   # toward zero, as coremltools casts
    with np.errstate(all="ignore"):
        return x.astype(want)
