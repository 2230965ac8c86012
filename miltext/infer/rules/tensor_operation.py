"""concat, stack and split: sizes along one axis add up, or are shared out. shape and fill:
a tensor's shape as a value, and a tensor made to a shape value (the value of `shape` is kept,
unknown dims as their Syms, so the ops that take it back as a shape know it). range_1d: a
vector of (end - start) / step numbers, its length a run-time size when the bounds are (the
positions 0 .. length of a sequence keep the length's identity)."""
from __future__ import annotations

import math

import numpy as np

from ...ir import TensorType
from ..errors import InferenceError, Unsupported
from ..operands import misfit
from ..registry import rule
from ..shapes import add_dims, axis, tensor
from ..symbols import Sym, derived, known


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


@rule("shape")
def shape(ops):
    x = ops.tensor("x")
    ops.output_values = [np.array(x.shape, dtype=np.int32 if all(map(known, x.shape)) else object)]
    return [tensor(ops.dtype("output_dtype", default="int32"), (len(x.shape),))]


@rule("fill")
def fill(ops):
    value_type = ops.tensor("value")
    dims = ops.sizes("shape", default=None)
    if dims is None:
        dims = [None] * ops.shape_length("shape")      # a shape of known length: the rank is known
    return [tensor(value_type.dtype, dims)]


@rule("range_1d")
def range_1d(ops):
    start_type = ops.tensor("start")
    start, end, step = (ops.value(key, required=False) for key in ("start", "end", "step"))
    length = None
    if start is not None and end is not None and step is not None \
            and start.size == end.size == step.size == 1:
        start, end, step = (v.reshape(-1)[0] for v in (start, end, step))
        numbers = [not isinstance(v, Sym) for v in (start, end, step)]
        if numbers[2] and step == 0:
            raise InferenceError("range_1d needs a step other than 0")
        for key, v, number in zip(("start", "end", "step"), (start, end, step), numbers):
            if number and not (isinstance(v, (int, float, np.number)) and math.isfinite(v)):
                raise misfit(key, f"{key} must be a finite number, not {v}")
        if all(numbers):
            length = max(0, math.ceil((end - start) / step))
        elif numbers[0] and start == 0 and numbers[2] and step == 1:
            length = end
        else:
            length = derived("range", start, end, step)
    return [tensor(start_type.dtype, (length,))]
