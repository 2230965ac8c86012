"""Elementwise unary ops: most have a namesake; the rest are short expressions of them."""
from __future__ import annotations

from ..table import lowers
from .common import binary, cast, name_of, scalar

_SAME = {"abs": "abs", "acos": "acos", "asin": "asin", "atan": "atan", "atanh": "atanh",
         "acosh": "acosh", "asinh": "asinh", "cos": "cos", "cosh": "cosh", "sin": "sin",
         "sinh": "sinh", "tan": "tan", "tanh": "tanh", "exp": "exp", "erf": "erf", "sqrt": "sqrt",
         "rsqrt": "rsqrt", "round": "round", "logical_not": "not"}


@lowers(*_SAME)
def same(low, op):
    x = low.tensor(op, "x")
    if op.type == "rsqrt" and low.has(op, "epsilon"):
        x = binary(low, "add", x, scalar(low, low.known_value(op, "epsilon"), x.dtype))
    low.bind(op, low.emit(_SAME[op.type], [x], low.out(op), hint=name_of(op)))


@lowers("log")
def log(low, op):
    x = low.tensor(op, "x")
    if low.has(op, "epsilon"):
        x = binary(low, "add", x, scalar(low, low.known_value(op, "epsilon"), x.dtype))
    low.bind(op, low.emit("log", [x], low.out(op), hint=name_of(op)))


@lowers("inverse")
def inverse(low, op):
    x = low.tensor(op, "x")
    if low.has(op, "epsilon"):
        x = binary(low, "add", x, scalar(low, low.known_value(op, "epsilon"), x.dtype))
    low.bind(op, binary(low, "divide", scalar(low, 1, x.dtype), x, hint=name_of(op)))


@lowers("square")
def square(low, op):
    x = low.tensor(op, "x")
    low.bind(op, low.emit("mul", [x, x], low.out(op), hint=name_of(op)))


@lowers("exp2")
def exp2(low, op):
    x = low.tensor(op, "x")
    low.bind(op, binary(low, "pow", scalar(low, 2, x.dtype), x, hint=name_of(op)))


@lowers("sign")
def sign(low, op):
    """(x > 0) - (0 > x), in x's dtype."""
    x = low.tensor(op, "x")
    zero = scalar(low, 0, x.dtype)
    pos = cast(low, binary(low, "greater", x, zero, "bool"), x.dtype)
    neg = cast(low, binary(low, "greater", zero, x, "bool"), x.dtype)
    low.bind(op, low.emit("sub", [pos, neg], low.out(op), hint=name_of(op)))


@lowers("floor", "ceil")
def floor_ceil(low, op):
    """floor(x) = floor_divide(x, 1); ceil(x) = -floor(-x)."""
    x = low.tensor(op, "x")
    one = scalar(low, 1, x.dtype)
    if op.type == "floor":
        low.bind(op, binary(low, "floor_divide", x, one, hint=name_of(op)))
        return
    neg = binary(low, "sub", scalar(low, 0, x.dtype), x)
    fl = binary(low, "floor_divide", neg, one)
    low.bind(op, binary(low, "sub", scalar(low, 0, x.dtype), fl, hint=name_of(op)))


@lowers("clip")
def clip(low, op):
    x = low.tensor(op, "x")
    lo = binary(low, "maximum", x, low.tensor(op, "alpha"))
    low.bind(op, binary(low, "minimum", lo, low.tensor(op, "beta"), hint=name_of(op)))


@lowers("threshold")
def threshold(low, op):
    x = low.tensor(op, "x")
    low.bind(op, binary(low, "maximum", x, low.tensor(op, "alpha"), hint=name_of(op)))


@lowers("cast")
def cast_op(low, op):
    x = low.tensor(op, "x")
    dtype, shape = low.out(op)
    low.bind(op, cast(low, x, dtype, hint=name_of(op)) if x.dtype != dtype else x)


@lowers("identity")
def identity(low, op):
    low.bind(op, low.tensor(op, "x"))

