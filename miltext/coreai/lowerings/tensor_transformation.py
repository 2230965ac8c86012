"""reshape, transpose, squeeze, expand_dims, flatten2d, slice_by_index, slice_by_size,
slice_update, reverse: shapes are static, so every change of shape is a `reshape` to the shape
the program declares, every slice the dialect's `slice` (or `slice_update`)."""
from __future__ import annotations

import numpy as np

from ..errors import PortError
from ..table import lowers
from .common import name_of, reshape, transpose


@lowers("reshape", "squeeze", "expand_dims", "flatten2d", "reshape_like")
def reshaped(low, op):
    _, shape = low.out(op)
    low.bind(op, reshape(low, low.tensor(op, "x"), shape, hint=name_of(op)))


@lowers("transpose")
def transposed(low, op):
    x = low.tensor(op, "x")
    low.bind(op, transpose(low, x, np.asarray(low.known_value(op, "perm")).reshape(-1), hint=name_of(op)))


def slice_to(low, x, starts, ends, strides, out_shape, hint):
    """`slice` of x by per-dim (start, end, stride) already resolved, then reshaped."""
    shape = tuple(len(range(s, e, st)) for s, e, st in zip(starts, ends, strides))
    if any(d == 0 for d in shape):
        raise PortError("the slice is empty, which Core AI tensors cannot be")
    if shape != x.shape or any(st != 1 for st in strides):
        x = low.emit("slice", [x, low.ints(starts, "begin"), low.ints(ends, "end"), low.ints(strides, "stride")],
                     (x.dtype, shape), hint=hint)
    return reshape(low, x, out_shape, hint=hint)


def resolved(n: int, selection) -> tuple:
    """(start, end, stride) for the dialect of a Python slice or index over n elements."""
    picked = np.arange(n)[selection].reshape(-1)
    if picked.size == 0:
        raise PortError("the slice is empty, which Core AI tensors cannot be")
    step = int(picked[1] - picked[0]) if picked.size > 1 else 1
    return int(picked[0]), int(picked[-1]) + step, step


def index_parts(low, op, shape: tuple) -> tuple:
    """(starts, ends, strides) resolved per dim from slice_by_index's (or slice_update's)
    begin, end, stride and masks."""
    rank = len(shape)
    begin = np.asarray(low.known_value(op, "begin")).reshape(-1)
    end = np.asarray(low.known_value(op, "end")).reshape(-1)
    stride = np.asarray(low.known_value(op, "stride", np.ones(rank, np.int32))).reshape(-1)
    masks = {k: np.asarray(low.known_value(op, k, np.zeros(rank, bool))).reshape(-1)
             for k in ("begin_mask", "end_mask", "squeeze_mask")}
    parts = []
    for i, n in enumerate(shape):
        b = None if masks["begin_mask"][i] else int(begin[i])
        e = None if masks["end_mask"][i] else int(end[i])
        if masks["squeeze_mask"][i]:
            parts.append(resolved(n, slice(b, b + 1 if b != -1 else None)))
            continue
        parts.append(resolved(n, slice(b, e, int(stride[i]))))
    return tuple(zip(*parts)) if parts else ((), (), ())


@lowers("slice_by_index")
def slice_by_index(low, op):
    x = low.tensor(op, "x")
    starts, ends, steps = index_parts(low, op, x.shape)
    low.bind(op, slice_to(low, x, starts, ends, steps, low.out(op)[1], name_of(op)))


@lowers("slice_update")
def slice_update(low, op):
    """The dialect's `slice_update`, the update reshaped to the slice's own shape (MIL drops
    squeezed dims from it)."""
    x = low.tensor(op, "x")
    starts, ends, steps = index_parts(low, op, x.shape)
    shape = tuple(len(range(s, e, st)) for s, e, st in zip(starts, ends, steps))
    update = reshape(low, low.tensor(op, "update"), shape)
    low.bind(op, low.emit("slice_update", [x, low.ints(starts, "begin"), low.ints(ends, "end"),
                                           low.ints(steps, "stride"), update],
                          low.out(op), hint=name_of(op)))


@lowers("slice_by_size")
def slice_by_size(low, op):
    x = low.tensor(op, "x")
    begin = np.asarray(low.known_value(op, "begin")).reshape(-1)
    size = np.asarray(low.known_value(op, "size")).reshape(-1)
    parts = [resolved(n, slice(int(b), n if s == -1 else int(b) % n + int(s)))
             for n, b, s in zip(x.shape, begin, size)]
    starts, ends, steps = zip(*parts)
    low.bind(op, slice_to(low, x, starts, ends, steps, low.out(op)[1], name_of(op)))


@lowers("reverse")
def reverse(low, op):
    x = low.tensor(op, "x")
    axes = low.known_value(op, "axes", None)
    axes = list(range(len(x.shape))) if axes is None else [int(a) % len(x.shape) for a in np.asarray(axes).reshape(-1)]
    low.bind(op, low.emit("reverse", [x, low.ints(axes, "axes")], low.out(op), hint=name_of(op)))
