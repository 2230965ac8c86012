"""Pooling over windows of the spatial dims (the same strided view as conv)."""
from __future__ import annotations

import numpy as np

from ..registry import kernel
from .conv import pads, windows
from .linalg import wide


def _pool(a, reduce, pad_value):
    x = np.asarray(a("x"))
    n = x.ndim - 2
    kernel_shape = a.ints("kernel_sizes")
    strides = a.ints("strides", None) or [1] * n
    padding = pads(a, x.shape[2:], kernel_shape, strides, [1] * n)
    if a.scalar("ceil_mode", False):
        padding = [(b, e + s - 1) for (b, e), s in zip(padding, strides)]
    padded = np.pad(wide(x), [(0, 0), (0, 0)] + padding, constant_values=pad_value)
    win = windows(padded, kernel_shape, strides, [1] * n)
    axes = tuple(range(2 + n, 2 + 2 * n))
    return x, win, axes, padding, kernel_shape, strides


@kernel("max_pool")
def max_pool(a):
    x, win, axes, *_ = _pool(a, np.max, -np.inf)
    return win.max(axis=axes).astype(x.dtype)


@kernel("avg_pool")
def avg_pool(a):
    x, win, axes, padding, kernel_shape, strides = _pool(a, np.mean, 0.0)
    total = win.sum(axis=axes)
    if a.scalar("exclude_padding_from_average", False):
        ones = np.pad(np.ones((1, 1) + x.shape[2:], np.float32), [(0, 0), (0, 0)] + padding)
        counts = windows(ones, kernel_shape, strides, [1] * len(kernel_shape)).sum(axis=axes)
        return (total / counts).astype(x.dtype)
    return (total / np.prod(kernel_shape)).astype(x.dtype)


@kernel("l2_pool")
def l2_pool(a):
    x, win, axes, *_ = _pool(a, None, 0.0)
    return np.sqrt((win * win).sum(axis=axes)).astype(x.dtype)
