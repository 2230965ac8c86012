"""Elementwise ops of two tensors: broadcast shapes; comparisons and logic give bool."""
from __future__ import annotations

import numpy as np

from ..errors import Unsupported
from ..registry import rule
from ..shapes import broadcast, tensor
from ..symbols import derived, known

ARITHMETIC = ("add", "sub", "mul", "real_div", "floor_div", "mod", "pow", "maximum", "minimum")
TO_BOOL = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
           "logical_and", "logical_or", "logical_xor")


@rule(*ARITHMETIC)
def arithmetic(ops):
    x, y = ops.tensor("x"), ops.tensor("y")
    if x.dtype != y.dtype:
        raise Unsupported("mixed dtypes promote the way coremltools does")
    out = tensor(x.dtype, broadcast(x.shape, y.shape))
    ops.output_values = [_integer_value(ops, x.dtype)]
    return [out]


def _integer_value(ops, dtype: str):
    """The value of integer arithmetic on known values (shapes computed in the program), so
    that an op taking the result as a shape knows it."""
    x, y = ops.value("x", required=False), ops.value("y", required=False)
    compute = _INTEGER.get(ops.op.type)
    if compute is None or x is None or y is None or not dtype.startswith("int") \
            or ops.op.type == "floor_div" and np.any(y == 0):
        return None
    if x.dtype == object or y.dtype == object:   # a size known at run time: a Sym of the sum
        def element(a, b):
            return compute(a, b) if known(a) and known(b) else derived(ops.op.type, a, b)
        return np.vectorize(element, otypes=[object])(x, y)
    return compute(x, y).astype(x.dtype)


_INTEGER = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "floor_div": np.floor_divide,
            "maximum": np.maximum, "minimum": np.minimum}


@rule(*TO_BOOL)
def comparison(ops):
    x, y = ops.tensor("x"), ops.tensor("y")
    return [tensor("bool", broadcast(x.shape, y.shape))]


@rule("select")
def select(ops):
    """a where cond, else b: a and b broadcast (cond's shape plays no part, as in coremltools)."""
    a, b = ops.tensor("a"), ops.tensor("b")
    if a.dtype != b.dtype:
        raise Unsupported("mixed dtypes promote the way coremltools does")
    return [tensor(a.dtype, broadcast(a.shape, b.shape))]
