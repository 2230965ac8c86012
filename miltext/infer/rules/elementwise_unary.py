"""Elementwise ops of one tensor: the output is the input's type (a bool for logical_not); for
cast, the input's shape with the dtype its `dtype` input names."""
from __future__ import annotations

from ... import dtypes
from ..errors import InferenceError
from ..registry import rule
from ..shapes import tensor
from ..symbols import fully_known

SAME_TYPE = ("abs", "acos", "asin", "atan", "atanh", "ceil", "clip", "cos", "cosh", "erf", "exp",
             "exp2", "floor", "inverse", "log", "round", "rsqrt", "sign", "sin", "sinh", "sqrt",
             "square", "tan", "tanh", "threshold", "identity", "logical_not",
             "band_part")   # band_part zeroes what lies outside a band: x's type too


@rule(*SAME_TYPE)
def same_type(ops):
    x = ops.tensor("x")
    return [tensor(x.dtype, x.shape)]


@rule("cast")
def cast(ops):
    x = ops.tensor("x")
    name = ops.scalar("dtype", of=str)
    if name not in dtypes.BY_NAME:
        raise InferenceError(f"unknown dtype {name!r}")
    ops.output_values = [_cast_value(ops.value("x", required=False), x.dtype, name)]
    return [tensor(name, x.shape)]


def _cast_value(value, source: str, name: str):
    """The value of an integer cast of a known value (a shape cast around gather). As in
    coremltools, a vector keeps the sizes only known at run time but a single one is lost."""
    if value is None or not (name.startswith(("int", "uint")) and source.startswith(("int", "uint"))):
        return None
    if fully_known(value):
        return value.astype(dtypes.BY_NAME[name].numpy)
    return value if value.ndim == 1 else None
