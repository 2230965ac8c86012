"""reduce_*: the dialect keeps reduced dims; a reshape drops them when MIL's keep_dims is
false. reduce_l2_norm and friends are written with sums."""
from __future__ import annotations

from ..table import lowers
from .common import axes_of, name_of, reshape

_SAME = {"reduce_sum": "reduce_sum", "reduce_mean": "reduce_mean", "reduce_max": "reduce_max",
         "reduce_min": "reduce_min", "reduce_prod": "reduce_product"}


def reduced(low, name, x, axes, hint="v"):
    kept = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    return low.emit(name, [x, low.ints(axes, "axes")], (x.dtype, kept), hint=hint)


@lowers(*_SAME)
def reduce(low, op):
    x = low.tensor(op, "x")
    axes = axes_of(op, low, "axes", len(x.shape))
    y = reduced(low, _SAME[op.type], x, axes)
    low.bind(op, reshape(low, y, low.out(op)[1], hint=name_of(op)))


@lowers("reduce_sum_square", "reduce_l2_norm")
def sum_square(low, op):
    x = low.tensor(op, "x")
    axes = axes_of(op, low, "axes", len(x.shape))
    y = reduced(low, "reduce_sum", low.emit("mul", [x, x], (x.dtype, x.shape)), axes)
    if op.type == "reduce_l2_norm":
        y = low.emit("sqrt", [y], (y.dtype, y.shape))
    low.bind(op, reshape(low, y, low.out(op)[1], hint=name_of(op)))


@lowers("reduce_argmax")
def argmax(low, op):
    x = low.tensor(op, "x")
    axis = int(low.known_value(op, "axis", -1)) % len(x.shape)
    kept = tuple(1 if i == axis else d for i, d in enumerate(x.shape))
    y = low.emit("argmax", [x, low.ints(axis, "axis")], ("int32", kept))
    low.bind(op, reshape(low, y, low.out(op)[1], hint=name_of(op)))

