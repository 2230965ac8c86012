"""Elementwise ops of two tensors: their shapes broadcast (NumPy's rule, dims from the end)."""
from __future__ import annotations

from ...infer.rules.elementwise_binary import ARITHMETIC, TO_BOOL
from . import Mistake, rule
from .common import shown


@rule(*ARITHMETIC, *TO_BOOL)
def broadcastable(ops):
    x, y = ops.tensor("x"), ops.tensor("y")
    for i, (a, b) in enumerate(zip(reversed(x.shape), reversed(y.shape))):
        if a is not None and b is not None and a != b and a != 1 and b != 1:
            raise Mistake("y", f"x is {shown(x)} and y is {shown(y)}: these shapes do not broadcast "
                               f"(dim {-1 - i} is {a} in x and {b} in y; sizes must match or be 1)")
