"""Gathers, scatters, top-k and sorts."""
from __future__ import annotations

import numpy as np

from ..errors import RunError
from ..limits import BIG
from ..registry import kernel


def _indices(a, key="indices"):
    return np.asarray(a(key)).astype(np.int64)


@kernel("gather")
def gather(a):
    x = np.asarray(a("x"))
    axis = a.scalar("axis", 0) % max(x.ndim, 1)     # positive: the batched case shifts it
    batch_dims = a.scalar("batch_dims", 0)
    idx = np.asarray(a("indices"))
    if batch_dims == 0 and idx.dtype.kind in "iu" and x.shape[axis]:
        # take counts a negative index from the end, as the op does, and refuses one out of
        # range; the result's size is bounded before it is made
        need = idx.size * (x.size // x.shape[axis]) * x.itemsize
        if need >= BIG or need > a.evaluator.limits.max_memory:
            a.allow(x.shape[:axis] + idx.shape + x.shape[axis + 1:], x.dtype)
        return a.replayable(lambda x, idx: x.take(idx, axis=axis), "x", "indices")(x, idx)
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + x.shape[axis], idx)
    a.allow(x.shape[:axis] + idx.shape[batch_dims:] + x.shape[axis + 1:], x.dtype)
    if batch_dims == 0:
        return np.take(x, idx, axis=axis)
    out = [np.take(xi, ii, axis=axis - batch_dims) for xi, ii in zip(x.reshape((-1,) + x.shape[batch_dims:]),
                                                                     idx.reshape((-1,) + idx.shape[batch_dims:]))]
    return np.stack(out).reshape(x.shape[:batch_dims] + out[0].shape)


@kernel("gather_along_axis")
def gather_along_axis(a):
    x = np.asarray(a("x"))
    axis = a.scalar("axis", 0)
    idx = _indices(a)
    return np.take_along_axis(x, np.where(idx < 0, idx + x.shape[axis], idx), axis=axis)


@kernel("gather_nd")
def gather_nd(a):
    x = np.asarray(a("x"))
    idx = _indices(a)
    batch_dims = a.scalar("batch_dims", 0)
    if batch_dims == 0:
        return x[tuple(np.moveaxis(idx, -1, 0))]
    # the leading batch_dims dims pair x with its indices: one gather per batch element
    batch = x.shape[:batch_dims]
    xs = x.reshape((-1,) + x.shape[batch_dims:])
    ids = idx.reshape((-1,) + idx.shape[batch_dims:])
    out = [xi[tuple(np.moveaxis(ii, -1, 0))] for xi, ii in zip(xs, ids)]
    return np.stack(out).reshape(batch + out[0].shape) if out else \
        np.zeros(batch + idx.shape[batch_dims:-1] + x.shape[batch_dims + idx.shape[-1]:], x.dtype)


def _scatter_combine(mode, old, new):
    return {"update": lambda: new, "add": lambda: old + new, "sub": lambda: old - new,
            "mul": lambda: old * new, "div": lambda: old / new, "max": lambda: np.maximum(old, new),
            "min": lambda: np.minimum(old, new)}[mode]()


@kernel("scatter")
def scatter(a):
    data = np.array(a("data"))
    idx, updates = _indices(a), np.asarray(a("updates"))
    axis, mode = a.scalar("axis", 0), str(a.scalar("mode", "add"))
    moved = np.moveaxis(data, axis, 0)
    upd = np.moveaxis(updates, axis, 0)
    for i, j in enumerate(idx.reshape(-1)):
        moved[j] = _scatter_combine(mode, moved[j], upd[i])
    return data


@kernel("scatter_along_axis")
def scatter_along_axis(a):
    data = np.array(a("data"))
    idx, updates = _indices(a), np.asarray(a("updates"))
    axis, mode = a.scalar("axis", 0), str(a.scalar("mode", "add"))
    grids = list(np.indices(idx.shape))
    grids[axis] = np.where(idx < 0, idx + data.shape[axis], idx)
    where = tuple(grids)
    if mode == "update":
        data[where] = updates
    elif mode in _AT:
        _AT[mode].at(data, where, updates)     # unbuffered: a repeated index combines every update
    else:
        raise RunError(f"mode {mode!r} is none scatter knows ({', '.join(['update', *_AT])})")
    return data


@kernel("scatter_nd")
def scatter_nd(a):
    """Each row of `indices` (its last axis, K long) picks a slice data[i0, ..., iK-1] that its
    update goes into, combined by `mode`; a repeated index combines every update."""
    data = np.array(a("data"))
    idx, updates = _indices(a), np.asarray(a("updates"))
    mode = str(a.scalar("mode", "add"))
    k = idx.shape[-1]
    rows = idx.reshape(-1, k)
    rows = np.where(rows < 0, rows + np.array(data.shape[:k]), rows)
    where = tuple(rows.T)
    upd = updates.reshape((len(rows),) + data.shape[k:])
    if mode == "update":
        data[where] = upd
    elif mode in _AT:
        _AT[mode].at(data, where, upd)
    else:
        raise RunError(f"mode {mode!r} is none scatter_nd knows ({', '.join(['update', *_AT])})")
    return data


_AT = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.true_divide,
       "max": np.maximum, "min": np.minimum}


@kernel("topk")
def topk(a):
    x = np.asarray(a("x"))
    k, axis = a.scalar("k", 1), a.scalar("axis", -1)
    ascending = a.scalar("ascending", False)
    order = np.argsort(x if ascending else -x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx.astype(a.out_dtype(1) or np.int32)


@kernel("argsort")
def argsort(a):
    x = np.asarray(a("x"))
    axis, ascending = a.scalar("axis", -1), a.scalar("ascending", False)
    return np.argsort(x if ascending else -x, axis=axis, kind="stable").astype(a.out_dtype() or np.int32)


@kernel("one_hot")
def one_hot(a):
    idx = _indices(a, "indices")
    depth, axis = a.scalar("one_hot_vector_size"), a.scalar("axis", -1)
    a.allow(idx.shape + (depth,), 8)
    on, off = a.scalar("on_value", 1), a.scalar("off_value", 0)
    out = np.where(np.arange(depth) == idx[..., None], on, off)
    return np.moveaxis(out, -1, axis)


@kernel("non_zero")
def non_zero(a):
    return np.argwhere(np.asarray(a("x"))).astype(np.int32)
