"""concat, stack and split: sizes along one axis add up, or are shared out."""
from __future__ import annotations

import math

import numpy as np

from ...ir import TensorType
from ..errors import InferenceError, Unsupported
from ..registry import rule
from ..shapes import add_dims, axis, tensor
from ..symbols import Sym, known


def _tensor_values(ops) -> list:
    """The types of the `values` tuple, when every one is a tensor of known rank."""
    parts = ops.types("values")
    if not parts or not all(isinstance(t, TensorType) and t.rank is None for t in parts):
        raise Unsupported("values of unknown types")
    return parts


@rule("concat")
def concat(ops):
    """Rank-0 values join into a vector (shape arithmetic: `concat((%batch, 1, 128))`); the
    other dims are the first value's, as coremltools has them."""
    parts = _tensor_values(ops)
    rank = len(parts[0].shape)
    if any(len(t.shape) != rank for t in parts):
        raise InferenceError(f"concat joins values of ranks {sorted({len(t.shape) for t in parts})}")
    if rank == 0:   # whatever the axis (coremltools checks none for scalars)
        ops.output_values = [_joined_value(ops, parts, 0)]
        return [tensor(parts[0].dtype, (len(parts),))]
    a = axis(ops.scalar("axis", of=int), rank)
    ops.output_values = [_joined_value(ops, parts, a)]
    out = list(parts[0].shape)
    out[a] = add_dims(*(t.shape[a] for t in parts))
    return [tensor(parts[0].dtype, out)]


def _joined_value(ops, parts, a):
    """The value of a concat of small values (a shape put together at run time): an element
    known only at run time is a Sym."""
    pieces = []
    for t, v in zip(parts, ops.values("values")):
        if v is None:
            if not all(known(d) for d in t.shape) or math.prod(t.shape) > 10:
                return None
            v = np.array([Sym() for _ in range(math.prod(t.shape))], dtype=object).reshape(t.shape)
        pieces.append(np.asarray(v))
    if any(p.dtype == object for p in pieces):
        pieces = [p.astype(object) for p in pieces]
    return np.stack(pieces) if pieces[0].ndim == 0 else np.concatenate(pieces, axis=a)


@rule("split")
def split(ops):
    x = ops.tensor("x")
    a = axis(ops.scalar("axis", of=int), len(x.shape))
    sizes = ops.ints("split_sizes", default=None)
    if sizes is None:
        n = ops.scalar("num_splits", of=int)
        size = x.shape[a]
        if not known(size):
            raise Unsupported("split of an unknown dim")
        if not 1 <= n <= max(size, 1):    # one output type per part: bounded before they are made
            raise InferenceError(f"num_splits must be from 1 to {max(size, 1)}, the size along axis {a}, not {n}")
        if size % n:
            # coremltools' rule: the last part takes what is left over
            step = -(-size // n)
            sizes = [step] * (n - 1) + [size - step * (n - 1)]
        else:
            sizes = [size // n] * n
    elif x.shape[a] is not None and sum(sizes) != x.shape[a]:
        raise InferenceError(f"split sizes {sizes} do not add up to {x.shape[a]}")
    out = []
    for s in sizes:
        shape = list(x.shape)
        shape[a] = s
        out.append(tensor(x.dtype, shape))
    return out


@rule("stack")
def stack(ops):
    parts = _tensor_values(ops)
    out = list(parts[0].shape)
    out.insert(axis(ops.scalar("axis", of=int), len(out) + 1), len(parts))
    return [tensor(parts[0].dtype, out)]
