"""Elementwise ops of one tensor: the output is the input's type (a bool for logical_not)."""
from __future__ import annotations

from ..registry import rule
from ..shapes import tensor

SAME_TYPE = ("abs", "acos", "asin", "atan", "atanh", "ceil", "clip", "cos", "cosh", "erf", "exp",
             "exp2", "floor", "inverse", "log", "round", "rsqrt", "sign", "sin", "sinh", "sqrt",
             "square", "tan", "tanh", "threshold", "identity", "logical_not",
             "band_part")   # band_part zeroes what lies outside a band: x's type too


@rule(*SAME_TYPE)
def same_type(ops):
    x = ops.tensor("x")
    return [tensor(x.dtype, x.shape)]
