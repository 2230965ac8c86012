"""Elementwise ops: binary ones broadcast as NumPy does; unary ones, with the epsilon and
alpha/beta inputs their definitions give."""
from __future__ import annotations

import math

import numpy as np

from ..errors import RunError
from ..registry import kernel

_BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "maximum": np.maximum,
    "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal, "less": np.less,
    "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
    "logical_and": np.logical_and, "logical_or": np.logical_or, "logical_xor": np.logical_xor,
}


def operands(a, *keys):
    """The inputs `keys` as arrays, once their broadcast result is known to fit in --max-memory."""
    values = [np.asarray(a(k)) for k in keys]
    a.allow(np.broadcast_shapes(*(v.shape for v in values)), max(8, *(v.itemsize for v in values)))
    return values


def _binary(fn):
    def run(a):
        x, y = operands(a, "x", "y")
        with np.errstate(all="ignore"):
            return fn(x, y)
    return run


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
        with np.errstate(all="ignore"):
            return fn(np.asarray(a("x")))
    return run


for _name, _fn in _UNARY.items():
    kernel(_name)(_unary(_fn))


_erf = np.vectorize(math.erf, otypes=[np.float64])


@kernel("erf")
def erf(a):
    x = np.asarray(a("x"))
    return _erf(x.astype(np.float64)).astype(x.dtype)


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
    cond, x, y = operands(a, "cond", "a", "b")
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
