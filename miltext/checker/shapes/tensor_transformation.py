"""Ops that rearrange or take part of a tensor: axes in range, permutations, element counts
that reshape keeps, parts that fit together, indices inside the dims they index."""
from __future__ import annotations

import math

import numpy as np

from ...infer.rules.reduction import REDUCTIONS
from ...ir import TensorType
from . import Mistake, rule
from .common import axes_in, axis_in, shown


def _parts(ops) -> list | None:
    parts = ops.types("values")
    if not parts or not all(isinstance(t, TensorType) and t.rank is None for t in parts):
        return None
    return parts


@rule("concat")
def concat(ops):
    parts = _parts(ops)
    if parts is None:
        return
    rank = len(parts[0].shape)
    if rank == 0:
        return      # scalars join as a vector (coremltools' reading)
    for i, t in enumerate(parts[1:], 1):
        if len(t.shape) != rank:
            raise Mistake("values", f"concat joins tensors of one rank: value 0 is {shown(parts[0])}, "
                                    f"value {i} is {shown(t)}")
    a = axis_in(ops, "axis", rank)
    if a is None:
        return
    for d in range(rank):
        if d == a:
            continue
        sizes = {t.shape[d] for t in parts} - {None}
        if len(sizes) > 1:
            raise Mistake("values", f"concat along axis {a} needs the other dims equal, but dim {d} is "
                                    f"{' and '.join(map(str, sorted(sizes)))} "
                                    f"({', '.join(shown(t) for t in parts)})")


@rule("stack")
def stack(ops):
    parts = _parts(ops)
    if parts is None:
        return
    for i, t in enumerate(parts[1:], 1):
        if len(t.shape) != len(parts[0].shape) or any(
                a is not None and b is not None and a != b for a, b in zip(t.shape, parts[0].shape)):
            raise Mistake("values", f"stack needs values of one shape: value 0 is {shown(parts[0])}, "
                                    f"value {i} is {shown(t)}")
    axis_in(ops, "axis", len(parts[0].shape), extra=1)


@rule("split")
def split(ops):
    x = ops.tensor("x")
    _not_scalar(ops, x)
    a = axis_in(ops, "axis", len(x.shape))
    if a is None:
        return
    size = x.shape[a]
    sizes = ops.ints("split_sizes", default=None) if ops.has("split_sizes") else None
    if sizes is not None and size is not None and None not in sizes and sum(sizes) != size:
        raise Mistake("split_sizes", f"split sizes {sizes} add up to {sum(sizes)}, but x {shown(x)} "
                                     f"has {size} along axis {a}")
    n = ops.scalar("num_splits", default=None, of=int) if ops.has("num_splits") else None
    if isinstance(n, int) and n < 1:
        raise Mistake("num_splits", f"num_splits must be 1 or more, not {n}")
    if isinstance(n, int) and size is not None and n > max(size, 1):
        raise Mistake("num_splits", f"num_splits {n} is more than the {size} x {shown(x)} has along "
                                    f"axis {a}")


@rule("transpose")
def transpose(ops):
    x = ops.tensor("x")
    perm = ops.ints("perm", default=None)
    if perm is None or None in perm:
        return
    rank = len(x.shape)
    if len(perm) != rank or sorted(p % rank if -rank <= p < rank else p for p in perm) != list(range(rank)):
        raise Mistake("perm", f"perm {perm} is not a permutation of the {rank} axes of x {shown(x)}")


@rule("reshape")
def reshape(ops):
    x = ops.tensor("x")
    target = ops.value("shape", required=False)
    if target is None or target.dtype == object:
        return
    dims = [int(d) for d in np.asarray(target).reshape(-1)]
    if dims.count(-1) > 1:
        raise Mistake("shape", f"shape {dims} has more than one -1 (only one dim may be inferred)")
    if any(d < -1 for d in dims):
        raise Mistake("shape", f"shape {dims} has a negative size")
    if None in x.shape or 0 in dims:
        return      # a 0 copies x's dim in some opsets and not in others: no count to compare
    total = math.prod(x.shape)
    rest = math.prod(d for d in dims if d != -1)
    if -1 in dims:
        if (rest == 0 and total != 0) or (rest and total % rest):
            raise Mistake("shape", f"x {shown(x)} has {total} elements, which shape {dims} cannot hold "
                                   f"(not a multiple of {rest})")
    elif rest != total:
        raise Mistake("shape", f"x {shown(x)} has {total} elements, but shape {dims} holds {rest}")


@rule("expand_dims")
def expand_dims(ops):
    x = ops.tensor("x")
    axes = ops.ints("axes", default=None)
    if axes is not None:
        axes_in(ops, "axes", len(x.shape), extra=len(axes))


@rule("squeeze")
def squeeze(ops):
    x = ops.tensor("x")
    axes = axes_in(ops, "axes", len(x.shape))
    for a in axes or ():
        if x.shape[a] is not None and x.shape[a] != 1:
            raise Mistake("axes", f"squeeze removes dims of size 1, but dim {a} of x {shown(x)} "
                                  f"is {x.shape[a]}")


@rule(*REDUCTIONS)
def reduction(ops):
    axes_in(ops, "axes", len(ops.tensor("x").shape))


@rule("reduce_argmax", "reduce_argmin", "softmax", "log_softmax")
def one_axis(ops):
    axis_in(ops, "axis", len(ops.tensor("x").shape))


@rule("layer_norm")
def layer_norm(ops):
    x = ops.tensor("x")
    axes = axes_in(ops, "axes", len(x.shape))
    if axes is None:
        return
    normalized = tuple(x.shape[a] for a in sorted(set(axes)))
    for key in ("gamma", "beta"):
        if ops.has(key):
            t = ops.tensor(key)
            if len(t.shape) != len(normalized) or any(
                    a is not None and b is not None and a != b for a, b in zip(t.shape, normalized)):
                want = "(" + ", ".join("?" if d is None else str(d) for d in normalized) + ")"
                raise Mistake(key, f"{key} must have the shape of the normalized dims of x, {want}, "
                                   f"not {shown(t)}")


@rule("gather")
def gather(ops):
    x, indices = ops.tensor("x"), ops.tensor("indices")
    _not_scalar(ops, x)
    a = axis_in(ops, "axis", len(x.shape), default=0)
    if a is None:
        return
    batch_dims = ops.scalar("batch_dims", default=0, of=int)
    if isinstance(batch_dims, int) and not 0 <= batch_dims <= min(a, len(indices.shape)):
        raise Mistake("batch_dims", f"batch_dims {batch_dims} must be at most the axis ({a}) and the "
                                    f"rank of indices ({len(indices.shape)})")
    _indices_inside(ops, x.shape[a], a)


@rule("gather_along_axis")
def gather_along_axis(ops):
    x, indices = ops.tensor("x"), ops.tensor("indices")
    if len(indices.shape) != len(x.shape):
        raise Mistake("indices", f"indices {shown(indices)} must have the rank of x {shown(x)}")
    a = axis_in(ops, "axis", len(x.shape), default=0)
    if a is None:
        return
    for d, (n, m) in enumerate(zip(x.shape, indices.shape)):
        if d != a and n is not None and m is not None and n != m:
            raise Mistake("indices", f"indices {shown(indices)} must have the sizes of x {shown(x)} "
                                     f"in every dim but the axis ({a}); dim {d} is {m}, not {n}")
    _indices_inside(ops, x.shape[a], a)


def _not_scalar(ops, x) -> None:
    if not x.shape:
        raise Mistake("x", f"{ops.op.type} needs x of rank 1 or more, not a scalar")


def _indices_inside(ops, size, a: int) -> None:
    values = ops.value("indices", required=False)
    if values is None or size is None or values.dtype.kind not in "iu" or not values.size:
        return
    low, high = int(values.min()), int(values.max())
    if low < -size or high >= size:
        bad = low if low < -size else high
        raise Mistake("indices", f"index {bad} is out of range for dim {a} of size {size} "
                                 f"(indices go from {-size} to {size - 1})")


@rule("slice_by_index", "slice_by_size")
def slice_lengths(ops):
    x = ops.tensor("x")
    rank = len(x.shape)
    for key in ("begin", "end", "stride", "size"):
        if ops.has(key):
            t = ops.type(key)
            if isinstance(t, TensorType) and t.rank is None and len(t.shape) == 1 \
                    and t.shape[0] is not None and t.shape[0] != rank:
                raise Mistake(key, f"{key} needs {rank} values, one per dim of x {shown(x)}, "
                                   f"not {t.shape[0]}")
    stride = ops.ints("stride", default=None) if ops.has("stride") else None
    if stride and 0 in stride:
        raise Mistake("stride", f"stride {stride} has a step of 0")


@rule("tile")
def tile(ops):
    x = ops.tensor("x")
    reps = ops.ints("reps", default=None)
    if reps is not None and len(reps) != len(x.shape):
        raise Mistake("reps", f"reps needs {len(x.shape)} values, one per dim of x {shown(x)}, "
                              f"not {len(reps)}")
