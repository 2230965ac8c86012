"""gather, gather_along_axis, scatter, scatter_along_axis: MIL's gather and scatter take whole
slices (numpy's take); the dialect's gather_along_axis and scatter_along_axis take one element
per index, so the indices are broadcast over the other dims first. Negative indices are made positive (ahead, when they are known)."""
from __future__ import annotations

import numpy as np

from ..errors import PortError
from ..table import lowers
from .common import binary, cast, name_of, reshape, scalar, where


def _positive(low, op, key: str, n: int):
    """The indices as si32, negative ones counted from the end."""
    if low.is_known(op, key):
        idx = np.asarray(low.known_value(op, key)).astype(np.int64)
        return low.ints(np.where(idx < 0, idx + n, idx), "indices")
    idx = cast(low, low.tensor(op, key), "int32")
    neg = binary(low, "greater", scalar(low, 0, "int32"), idx, "bool")
    wrapped = binary(low, "add", idx, scalar(low, n, "int32"))
    return low.emit("where", [neg, wrapped, idx], ("int32", idx.shape))


@lowers("gather")
def gather(low, op):
    x = low.tensor(op, "x")
    rank = len(x.shape)
    axis = int(low.known_value(op, "axis", 0)) % rank
    if int(low.known_value(op, "batch_dims", 0)) != 0:
        raise PortError("gather with batch_dims has no Core AI lowering")
    idx = _positive(low, op, "indices", x.shape[axis])
    flat = _spread(low, idx, x.shape, axis)
    picked = low.emit("gather_along_axis", [x, flat, low.ints(axis, "axis")], (x.dtype, flat.shape))
    low.bind(op, reshape(low, picked, low.out(op)[1], hint=name_of(op)))


def _spread(low, idx, shape: tuple, axis: int):
    """Whole-slice indices (k of them, along `axis` of `shape`) as one index per element: the
    shape with k at `axis`, each index repeated over the other dims."""
    k = int(np.prod(idx.shape)) if idx.shape else 1
    flat = reshape(low, idx, (1,) * axis + (k,) + (1,) * (len(shape) - axis - 1))
    full = shape[:axis] + (k,) + shape[axis + 1:]
    if flat.shape != full:
        flat = low.emit("broadcast_to", [flat, low.uints(full, "shape")], ("int32", full))
    return flat


_MODES = ("update", "add", "sub", "mul", "div", "max", "min")


def _scatter(low, op, x, idx, updates, axis: int):
    mode = str(low.known_value(op, "mode", np.asarray("add")))
    if mode not in _MODES:
        raise PortError(f"scatter mode {mode!r} has no Core AI counterpart")
    updates = reshape(low, updates, idx.shape)
    low.bind(op, low.emit("scatter_along_axis", [x, idx, updates, low.ints(axis, "axis")], low.out(op),
                          f"scatter_mode = #coreai.scatter_mode<{mode}>", hint=name_of(op)))


@lowers("scatter")
def scatter(low, op):
    """MIL's scatter writes whole slices (data[indices] = updates, along axis)."""
    x = low.tensor(op, "data")
    axis = int(low.known_value(op, "axis", 0)) % len(x.shape)
    idx = _spread(low, _positive(low, op, "indices", x.shape[axis]), x.shape, axis)
    _scatter(low, op, x, idx, low.tensor(op, "updates"), axis)


@lowers("scatter_along_axis")
def scatter_along_axis(low, op):
    x = low.tensor(op, "data")
    axis = int(low.known_value(op, "axis", 0)) % len(x.shape)
    _scatter(low, op, x, _positive(low, op, "indices", x.shape[axis]), low.tensor(op, "updates"), axis)


@lowers("gather_along_axis")
def gather_along_axis(low, op):
    x = low.tensor(op, "x")
    axis = int(low.known_value(op, "axis", 0)) % len(x.shape)
    idx = _positive(low, op, "indices", x.shape[axis])
    low.bind(op, low.emit("gather_along_axis", [x, idx, low.ints(axis, "axis")], low.out(op), hint=name_of(op)))


@lowers("select")
def select(low, op):
    c, a, b = low.tensor(op, "cond"), low.tensor(op, "a"), low.tensor(op, "b")
    low.bind(op, where(low, cast(low, c, "bool"), a, b, low.out(op), hint=name_of(op)))
