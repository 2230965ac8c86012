"""add, sub, mul, real_div, pow, maximum, minimum, floor_div, mod, comparisons and logic ops:
MIL broadcasts implicitly; the dialect's plain ops take equal shapes, its
`decomposable.broadcasting_*` ops broadcast."""
from __future__ import annotations

from ..table import lowers
from .common import binary, name_of

_SAME = {"add": "add", "sub": "sub", "mul": "mul", "real_div": "divide", "pow": "pow",
         "maximum": "maximum", "minimum": "minimum", "floor_div": "floor_divide", "mod": "modulo",
         "logical_and": "and", "logical_or": "or", "logical_xor": "xor"}
_COMPARE = {"equal": "equal", "not_equal": "not_equal", "greater": "greater"}


@lowers(*_SAME)
def arithmetic(low, op):
    a, b = low.tensor(op, "x"), low.tensor(op, "y")
    dtype, _ = low.out(op)
    low.bind(op, binary(low, _SAME[op.type], a, b, dtype, hint=name_of(op)))


@lowers(*_COMPARE)
def compare(low, op):
    a, b = low.tensor(op, "x"), low.tensor(op, "y")
    low.bind(op, binary(low, _COMPARE[op.type], a, b, "bool", hint=name_of(op)))


@lowers("less", "greater_equal", "less_equal")
def compare_swapped(low, op):
    """The dialect has only `greater`: x < y is y > x; x >= y is not (y > x)."""
    a, b = low.tensor(op, "x"), low.tensor(op, "y")
    if op.type == "less":
        low.bind(op, binary(low, "greater", b, a, "bool", hint=name_of(op)))
        return
    first, second = (b, a) if op.type == "greater_equal" else (a, b)
    gt = binary(low, "greater", first, second, "bool")
    low.bind(op, low.emit("not", [gt], ("bool", gt.shape), hint=name_of(op)))
