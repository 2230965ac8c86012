"""Ops that take part of a tensor: slice_by_index, slice_by_size, gather, gather_along_axis."""
from __future__ import annotations

from ..errors import InferenceError
from ..registry import rule
from ..shapes import axis, tensor


@rule("slice_by_index")
def slice_by_index(ops):
    x = ops.tensor("x")
    rank = len(x.shape)
    begin, end = ops.ints("begin"), ops.ints("end")
    stride = ops.ints("stride", default=[1] * rank)
    begin_mask = ops.value("begin_mask", required=False)
    end_mask = ops.value("end_mask", required=False)
    squeeze_mask = ops.value("squeeze_mask", required=False)
    begin_mask = [False] * rank if begin_mask is None else [bool(b) for b in begin_mask.reshape(-1)]
    end_mask = [False] * rank if end_mask is None else [bool(b) for b in end_mask.reshape(-1)]
    squeeze_mask = [False] * rank if squeeze_mask is None else [bool(b) for b in squeeze_mask.reshape(-1)]
    if not len(begin) == len(end) == len(stride) == rank:
        raise InferenceError(f"begin, end and stride need {rank} values each")
    out = []
    for i, size in enumerate(x.shape):
        if squeeze_mask[i]:
            continue
        if size is None:
            out.append(None)
            continue
        b = None if begin_mask[i] else begin[i]
        e = None if end_mask[i] else end[i]
        out.append(len(range(*slice(b, e, stride[i]).indices(size))))
    return [tensor(x.dtype, out)]


@rule("slice_by_size")
def slice_by_size(ops):
    x = ops.tensor("x")
    begin, size = ops.ints("begin"), ops.ints("size")
    if not len(begin) == len(size) == len(x.shape):
        raise InferenceError(f"begin and size need {len(x.shape)} values each")
    out = []
    for d, b, s in zip(x.shape, begin, size):
        if s != -1:
            out.append(s)
        else:
            out.append(None if d is None else d - (b % d if d else 0))
    return [tensor(x.dtype, out)]


@rule("gather")
def gather(ops):
    x, indices = ops.tensor("x"), ops.tensor("indices")
    a = axis(ops.scalar("axis", default=0), len(x.shape))
    batch_dims = ops.scalar("batch_dims", default=0)
    shape = x.shape[:a] + indices.shape[batch_dims:] + x.shape[a + 1:]
    return [tensor(x.dtype, shape)]


@rule("gather_along_axis")
def gather_along_axis(ops):
    x, indices = ops.tensor("x"), ops.tensor("indices")
    return [tensor(x.dtype, indices.shape)]
