"""avg_pool, max_pool and l2_pool: a window over the spatial dims, channels kept."""
from __future__ import annotations

from ..registry import rule
from ..shapes import tensor
from .conv import spatial_out, window


@rule("avg_pool", "max_pool", "l2_pool")
def pool(ops):
    x = ops.tensor("x")
    kernel = ops.ints("kernel_sizes")
    strides, _, pad_type, pad = window(ops, x, kernel)
    ones = [1] * len(kernel)
    ceil_mode = bool(ops.scalar("ceil_mode", default=False, of=bool))
    spatial = spatial_out(x.shape[2:], kernel, strides, ones, pad_type, pad, ceil_mode)
    return [tensor(x.dtype, (*x.shape[:2], *spatial))]
