"""Helpers the family modules share: broadcasting binary ops, reshapes, transposes, casts."""
from __future__ import annotations

import numpy as np

from ..errors import PortError


def broadcast_shape(a: tuple, b: tuple) -> tuple:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        raise PortError(f"shapes {a} and {b} do not broadcast") from None


def binary(low, name: str, a, b, dtype: str | None = None, hint: str = "v"):
    """`name` of a and b with MIL's implicit broadcasting: the dialect's plain op when the shapes
    agree, its `decomposable.broadcasting_*` op when they do not."""
    shape = broadcast_shape(a.shape, b.shape)
    out = (dtype or a.dtype, shape)
    if a.shape == b.shape:
        return low.emit(name, [a, b], out, hint=hint)
    return low.emit(f"coreai.decomposable.broadcasting_{name}", [a, b], out, hint=hint)


def where(low, c, a, b, out: tuple, hint: str = "v"):
    """a where c, else b (c bool), broadcasting as MIL's select does."""
    if c.shape == a.shape == b.shape:
        return low.emit("where", [c, a, b], out, hint=hint)
    return low.emit("coreai.decomposable.broadcasting_where", [c, a, b], out, hint=hint)


def reshape(low, v, shape, hint: str = "v"):
    shape = tuple(int(d) for d in shape)
    if shape == v.shape:
        return v
    return low.emit("reshape", [v, low.ints(shape, "shape")], (v.dtype, shape), hint=hint)


def transpose(low, v, perm, hint: str = "v"):
    perm = [int(p) % len(v.shape) for p in perm] if v.shape else []
    if perm == list(range(len(v.shape))):
        return v
    shape = tuple(v.shape[p] for p in perm)
    return low.emit("transpose", [v, low.uints(perm, "perm")], (v.dtype, shape), hint=hint)


def cast(low, v, dtype: str, hint: str = "v"):
    if v.dtype == dtype:
        return v
    return low.emit("cast", [v], (dtype, v.shape), hint=hint)


def scalar(low, value, dtype: str, hint: str = "c"):
    """A 0-d constant of `dtype`."""
    from .. import mlir
    return low.constant(np.asarray(value, mlir.numpy_dtype(dtype)), dtype, hint)


def axes_of(op, low, key: str, rank: int, default=None) -> list:
    """A known axes input, each made non-negative."""
    value = low.known_value(op, key, default)
    if value is None:
        return list(range(rank))
    return sorted({int(a) % rank for a in np.asarray(value).reshape(-1)}) if rank else []


def name_of(op) -> str:
    return op.outputs[0].name if op.outputs else "v"
