"""Ops that take part of a tensor: slice_by_index, slice_by_size, gather, gather_along_axis."""
from __future__ import annotations

import numpy as np

from ..errors import InferenceError
from ..registry import rule
from ..shapes import axis, tensor
from ..symbols import known


@rule("slice_by_index")
def slice_by_index(ops):
    """Sizes as coremltools works them out: begin and end count only when every element is
    known; a slice of an unknown size is unknown unless its length is 0 or 1 whatever the size."""
    x = ops.tensor("x")
    rank = len(x.shape)
    begin, end = ops.known_ints("begin"), ops.known_ints("end")
    stride = ops.known_ints("stride") or [1] * rank
    begin_mask, end_mask, squeeze_mask = (_mask(ops, key, rank) for key in ("begin_mask", "end_mask", "squeeze_mask"))
    for name, given in (("begin", begin), ("end", end), ("stride", stride)):
        if given is not None and len(given) != rank:
            raise InferenceError(f"{name} needs {rank} values, one per dim of x")
    begin, end = begin or [None] * rank, end or [None] * rank
    out = [_sliced(x.shape[i], begin[i], end[i], stride[i], begin_mask[i], end_mask[i])
           for i in range(rank) if not squeeze_mask[i]]
    ops.output_values = [_sliced_value(ops, x, begin, end, stride, begin_mask, end_mask, squeeze_mask)]
    return [tensor(x.dtype, out)]


def _mask(ops, key: str, rank: int) -> list:
    value = ops.value(key, required=False)
    return [False] * rank if value is None else [bool(b) for b in np.asarray(value).reshape(-1)]


def _sliced(size, b, e, stride, begin_mask, end_mask):
    if begin_mask and end_mask:
        if not known(size):
            return size if stride in (1, -1) else None
        return -(-size // abs(stride))
    if not begin_mask and not end_mask and b is not None and e is not None:
        n = None
        if b >= 0 and e >= 0 and stride > 0:
            if e < b:
                raise InferenceError(f"a slice from {b} to {e} by {stride}")
            n = max(0, (e - b + stride - 1) // stride)
        if b < 0 and e < 0 and stride < 0:
            if b < e:
                raise InferenceError(f"a slice from {b} to {e} by {stride}")
            n = max(0, -(b - e - stride - 1) // stride)
        if n in (0, 1):
            return n
    if not begin_mask and end_mask and b is not None and (b == 0 and stride < 0 or b == -1 and stride > 0):
        return 1
    if not known(size):
        return None
    if size == 1:
        return 1
    if b is None and not begin_mask or e is None and not end_mask:
        return None
    if b is not None and b < 0:
        b = max(0, b + size)
    if e is not None and e < 0:
        e = max(0, e + size)
    low, high = (0, size) if stride > 0 else (-1, size - 1)
    first, last = (b, e) if stride > 0 else (e, b)
    first_masked, last_masked = (begin_mask, end_mask) if stride > 0 else (end_mask, begin_mask)
    if first_masked:
        first = low
    last = high if last_masked else min(last, high)
    return max(0, -(-(last - first) // abs(stride)))


def _sliced_value(ops, x, begin, end, stride, begin_mask, end_mask, squeeze_mask):
    """The value of a slice of a known value (part of a shape)."""
    value = ops.value("x", required=False)
    if value is None or None in begin or None in end or not all(map(known, x.shape)):
        return None
    # a squeezed dim takes the one element at begin
    index = tuple((0 if bm else b) if sq else slice(None if bm else b, None if em else e, s)
                  for b, e, s, bm, em, sq in zip(begin, end, stride, begin_mask, end_mask, squeeze_mask))
    try:
        return np.asarray(np.asarray(value)[index])
    except (IndexError, ValueError):
        return None


@rule("slice_by_size")
def slice_by_size(ops):
    x = ops.tensor("x")
    begin_type, size_type = ops.tensor("begin"), ops.tensor("size")
    if len(begin_type.shape) != 1 or len(size_type.shape) != 1:
        raise InferenceError("begin and size must be vectors")
    sizes = ops.sizes("size", default=None)
    if sizes is None:
        return [tensor(x.dtype, [None] * len(x.shape))]
    begin = ops.sizes("begin", default=None)
    if not len(sizes) == len(x.shape) or begin is not None and len(begin) != len(x.shape):
        raise InferenceError(f"begin and size need {len(x.shape)} values each")
    out = []
    for i, (d, s) in enumerate(zip(x.shape, sizes)):
        if not known(s) or s != -1:
            out.append(s)
        elif begin is not None and known(d) and known(begin[i]):
            out.append(d - begin[i])
        else:
            out.append(None)
    return [tensor(x.dtype, out)]


@rule("gather")
def gather(ops):
    x, indices = ops.tensor("x"), ops.tensor("indices")
    a = axis(ops.scalar("axis", default=0, of=int), len(x.shape))
    batch_dims = ops.scalar("batch_dims", default=0, of=int)
    shape = x.shape[:a] + indices.shape[batch_dims:] + x.shape[a + 1:]
    ops.output_values = [_gathered_value(ops, a, batch_dims)]
    return [tensor(x.dtype, shape)]


def _gathered_value(ops, a: int, batch_dims: int):
    """The elements a gather picks from a known value (a size out of a shape)."""
    value, indices = ops.value("x", required=False), ops.value("indices", required=False)
    if value is None or indices is None or batch_dims or indices.dtype == object:
        return None
    try:
        return np.asarray(np.take(np.asarray(value), np.asarray(indices).astype(np.int64), axis=a))
    except IndexError:
        return None


@rule("gather_along_axis")
def gather_along_axis(ops):
    x, indices = ops.tensor("x"), ops.tensor("indices")
    return [tensor(x.dtype, indices.shape)]


@rule("slice_update")
def slice_update(ops):
    """A slice of x written over: x's type."""
    x = ops.tensor("x")
    return [tensor(x.dtype, x.shape)]


@rule("scatter", "scatter_nd", "scatter_along_axis")
def scatter(ops):
    """Updates written into data: data's type."""
    data = ops.tensor("data")
    return [tensor(data.dtype, data.shape)]
