"""Ops that rearrange a tensor's dims: reshape, transpose, expand_dims, squeeze, tile, pad."""
from __future__ import annotations

import math

from ..errors import InferenceError, Unsupported
from ..registry import rule
from ..shapes import axis, tensor


@rule("reshape")
def reshape(ops):
    x = ops.tensor("x")
    target = ops.value("shape", required=False)
    if target is None:   # a computed shape: its length is the rank, its sizes are unknown
        shape_type = ops.tensor("shape")
        if len(shape_type.shape) != 1 or shape_type.shape[0] is None:
            raise Unsupported("a shape of unknown length")
        return [tensor(x.dtype, (None,) * shape_type.shape[0])]
    dims = [None if d is None else int(d) for d in target.reshape(-1)]
    out = [x.shape[i] if d == 0 and i < len(x.shape) else d for i, d in enumerate(dims)]
    if -1 in out:
        known = [d for d in out if d != -1]
        total = None if any(d is None for d in x.shape) else math.prod(x.shape)
        if total is None or any(d is None for d in known):
            out = [None if d == -1 else d for d in out]
        else:
            rest = math.prod(known)
            if rest == 0 or total % rest:
                raise InferenceError(f"cannot reshape {total} elements to {dims}")
            out = [total // rest if d == -1 else d for d in out]
    return [tensor(x.dtype, out)]


@rule("transpose")
def transpose(ops):
    x = ops.tensor("x")
    perm = [axis(p, len(x.shape)) for p in ops.ints("perm")]
    if sorted(perm) != list(range(len(x.shape))):
        raise InferenceError(f"perm {perm} is not a permutation of {len(x.shape)} axes")
    return [tensor(x.dtype, [x.shape[p] for p in perm])]


@rule("expand_dims")
def expand_dims(ops):
    x = ops.tensor("x")
    rank = len(x.shape) + len(ops.ints("axes"))
    new = sorted(axis(a, rank) for a in ops.ints("axes"))
    out = list(x.shape)
    for a in new:
        out.insert(a, 1)
    return [tensor(x.dtype, out)]


@rule("squeeze")
def squeeze(ops):
    x = ops.tensor("x")
    axes = ops.ints("axes", default=None)
    if axes is None:
        if None in x.shape:
            raise Unsupported("which unknown dims are 1")
        return [tensor(x.dtype, [d for d in x.shape if d != 1])]
    drop = {axis(a, len(x.shape)) for a in axes}
    return [tensor(x.dtype, [d for i, d in enumerate(x.shape) if i not in drop])]


@rule("tile")
def tile(ops):
    x = ops.tensor("x")
    reps = ops.ints("reps")
    if len(reps) != len(x.shape):
        raise InferenceError(f"reps has {len(reps)} values for rank {len(x.shape)}")
    return [tensor(x.dtype, [None if d is None else d * r for d, r in zip(x.shape, reps)])]


@rule("pad")
def pad(ops):
    x = ops.tensor("x")
    amounts = ops.ints("pad")
    n = len(amounts) // 2
    if len(amounts) % 2 or n > len(x.shape):
        raise InferenceError(f"pad has {len(amounts)} values for rank {len(x.shape)}")
    out = list(x.shape)
    for i in range(n):
        d = len(out) - n + i
        out[d] = None if out[d] is None else out[d] + amounts[2 * i] + amounts[2 * i + 1]
    return [tensor(x.dtype, out)]
