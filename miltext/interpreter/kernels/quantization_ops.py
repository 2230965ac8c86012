"""iOS17's quantize and dequantize: per tensor, or per channel along `axis`."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ..registry import kernel


def _along(a, v, rank: int):
    """A scale or zero point laid along `axis` (a scalar stays a scalar)."""
    v = np.asarray(v, np.float32)
    if v.ndim == 0 or v.size == 1:
        return v.reshape(())
    shape = [1] * rank
    shape[a.scalar("axis", -1) % rank] = v.size
    return v.reshape(shape)


@kernel("quantize")
def quantize(a):
    x = np.asarray(a("input"))
    out = dtypes.by_name(str(a.scalar("output_dtype"))).numpy
    zero = a("zero_point", None)
    q = np.round(x.astype(np.float32) / _along(a, a("scale"), x.ndim))   # half to even
    if zero is not None:
        q = q + _along(a, zero, x.ndim)
    info = np.iinfo(out)
    return np.clip(q, info.min, info.max).astype(out)


@kernel("dequantize")
def dequantize(a):
    q = np.asarray(a("input"))
    zero = a("zero_point", None)
    x = q.astype(np.float32) - (0 if zero is None else _along(a, zero, q.ndim))
    scale = np.asarray(a("scale"))
    return (x * _along(a, scale, q.ndim)).astype(scale.dtype)
