"""Ops that rearrange a tensor's dims: reshape, transpose, expand_dims, squeeze, tile, pad."""
from __future__ import annotations

import math

import numpy as np

from ..errors import InferenceError, Unsupported
from ..registry import rule
from ..shapes import axis, product, tensor
from ..symbols import Sym, derived, known


@rule("reshape")
def reshape(ops):
    """The target shape's known sizes (ints, or Syms read from shapes at run time); -1 is what
    the element count leaves, worked out over Syms as coremltools solves it (a `(b, t, 32)`
    reshaped to `[b, t, 4, -1]` gives 8); a target of unknown value but known length gives the
    rank with unknown sizes."""
    x = ops.tensor("x")
    target = ops.value("shape", required=False)
    if target is None:
        return [tensor(x.dtype, (None,) * ops.shape_length("shape"))]
    dims = [d if isinstance(d, Sym) else int(d) for d in np.asarray(target).reshape(-1)]
    if sum(1 for d in dims if known(d) and d == -1) > 1:
        raise InferenceError(f"reshape to {dims} has more than one -1")
    if all(map(known, x.shape)) and all(map(known, dims)):
        return [tensor(x.dtype, _static(x.shape, dims, _opset_number(ops.opset) >= 7))]
    return [tensor(x.dtype, [_solved(x.shape, dims) if known(d) and d == -1 else d for d in dims])]


def _static(shape, dims, right_aligned_zeros: bool) -> list:
    if 0 in dims:   # 0: the input's size (iOS17 counts dims from the right)
        if right_aligned_zeros:
            padded = [1] * (len(dims) - len(shape)) + list(shape)
            dims = [padded[i - len(dims)] if d == 0 else d for i, d in enumerate(dims)] \
                if len(shape) >= len(dims) else [padded[i] if d == 0 else d for i, d in enumerate(dims)]
        else:
            if len(shape) != len(dims):
                raise InferenceError(f"a 0 in reshape's shape {dims} needs the input's rank {len(shape)}")
            dims = [shape[i] if d == 0 else d for i, d in enumerate(dims)]
    total = math.prod(shape)
    if -1 in dims:
        rest = math.prod(d for d in dims if d != -1)
        if rest == 0 or total % rest:
            raise InferenceError(f"cannot reshape {total} elements to {dims}")
        dims = [total // rest if d == -1 else d for d in dims]
    if math.prod(dims) != total:
        raise InferenceError(f"cannot reshape {total} elements to {dims}")
    return dims


def _solved(shape, dims):
    """The size -1 stands for: the input's element count over the other sizes, when that is a
    whole number or one of the input's Syms; None (unknown) otherwise."""
    left, right = product(shape), product(d for d in dims if not (known(d) and d == -1))
    if left is None or right is None or right[0] == 0 or left[0] % right[0]:
        return None
    rest = list(left[1])
    for s in right[1]:
        if s not in rest:
            return None
        rest.remove(s)
    factor = left[0] // right[0]
    if not rest:
        return factor
    if len(rest) == 1 and factor == 1:
        return rest[0]
    return derived("mul", factor, *sorted(rest, key=lambda s: repr(s.key)))


def _opset_number(opset: str) -> int:
    digits = "".join(c for c in opset if c.isdigit())
    return int(digits) if digits else 0


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
        if not all(map(known, x.shape)):
            raise Unsupported("which unknown dims are 1")
        return [tensor(x.dtype, [d for d in x.shape if d != 1])]
    drop = {axis(a, len(x.shape)) for a in axes}
    return [tensor(x.dtype, [d for i, d in enumerate(x.shape) if i not in drop])]


@rule("tile")
def tile(ops):
    """Sizes times reps; reps computed at run time leave the rank, with unknown sizes."""
    x = ops.tensor("x")
    reps = ops.sizes("reps", default=None)
    if reps is None:
        ops.tensor("reps")
        return [tensor(x.dtype, [None] * len(x.shape))]
    if any(known(r) and r <= 0 for r in reps):
        raise InferenceError(f"reps must be greater than 0, not {reps}")
    if len(reps) != len(x.shape):
        raise InferenceError(f"reps has {len(reps)} values for rank {len(x.shape)}")
    return [tensor(x.dtype, [d * r if known(d) and known(r) else (d if r == 1 else None) for d, r in zip(x.shape, reps)])]


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
        out[d] = out[d] + amounts[2 * i] + amounts[2 * i + 1] if known(out[d]) else None
    return [tensor(x.dtype, out)]
