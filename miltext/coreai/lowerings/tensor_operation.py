"""shape, concat, split, tile, stack, fill and range_1d: with static shapes, `shape` is known
before the program runs (and so is the arithmetic on it, folded); the rest map to the
dialect's concat, slice and tile."""
from __future__ import annotations

import numpy as np

from ..errors import PortError
from ..table import lowers
from .common import binary, name_of, reshape
from .tensor_transformation import slice_to


@lowers("shape")
def shape(low, op):
    x = low.tensor(op, "x")
    low.known[op.outputs[0].name] = np.asarray(x.shape, np.int32)


def concat_values(low, values, axis: int, out, hint):
    if len(values) == 1:
        return reshape(low, values[0], out[1], hint=hint)
    dim = low.constant(np.asarray(axis, np.int32), "int32", "axis")
    return low.emit("concat", [dim, *values], out, hint=hint)


@lowers("concat")
def concat(low, op):
    if bool(low.known_value(op, "interleave", False)):
        raise PortError("concat with interleave=True has no Core AI lowering")
    values = low.tensors(op, "values")
    out = low.out(op)
    axis = int(low.known_value(op, "axis")) % len(out[1])
    values = [v for v in values if v.shape[axis] != 0]
    low.bind(op, concat_values(low, values, axis, out, name_of(op)))


@lowers("stack")
def stack(low, op):
    dtype, shape = low.out(op)
    axis = int(low.known_value(op, "axis", 0)) % len(shape)
    parts = []
    for v in low.tensors(op, "values"):
        parts.append(reshape(low, v, v.shape[:axis] + (1,) + v.shape[axis:]))
    low.bind(op, concat_values(low, parts, axis, (dtype, shape), name_of(op)))


@lowers("split")
def split(low, op):
    x = low.tensor(op, "x")
    axis = int(low.known_value(op, "axis")) % len(x.shape)
    start = 0
    values = []
    for var in op.outputs:
        size = var.type.shape[axis]
        starts = [0] * len(x.shape)
        ends = list(x.shape)
        starts[axis], ends[axis] = start, start + size
        values.append(slice_to(low, x, starts, ends, [1] * len(x.shape), var.type.shape, var.name))
        start += size
    low.bind(op, *values)


@lowers("tile")
def tile(low, op):
    x = low.tensor(op, "x")
    reps = np.asarray(low.known_value(op, "reps")).reshape(-1)
    low.bind(op, low.emit("tile", [x, low.uints(reps, "reps")], low.out(op), hint=name_of(op)))


@lowers("fill", "fill_like")
def fill(low, op):
    """A run-time fill of a static shape: the value broadcast to it."""
    dtype, shape = low.out(op)
    value = low.tensor(op, "value") if low.has(op, "value") else None
    if value is None:
        low.bind(op, low.constant(np.zeros(shape), dtype, name_of(op)))
        return
    zero = low.constant(np.zeros(shape), dtype, "zeros")
    low.bind(op, binary(low, "add", zero, value, dtype, hint=name_of(op)))
