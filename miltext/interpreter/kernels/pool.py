"""Pooling over windows of the spatial dims (the same strided view as conv)."""
from __future__ import annotations

from functools import partial

import numpy as np

from .. import parallel
from ..errors import RunError
from ..fast_kernels import usable
from ..limits import need
from ..registry import kernel
from .conv import padded, pads, windows
from .linear import wide


def _out_size(size: int, k: int, s: int, before: int, after: int, ceil_mode: bool) -> int:
    """The definitions' output size; in ceil mode a last window that would start in the
    end padding is dropped."""
    if not ceil_mode:
        return (size + before + after - k) // s + 1
    out = (size + before + after - k + s - 1) // s + 1
    if (out - 1) * s >= size + before and (before > 0 or after > 0):
        out -= 1
    return out


def _layout(a, x):
    """Kernel, strides, the declared padding, and the extra end padding ceil mode needs."""
    n = x.ndim - 2
    kernel_shape = a.ints("kernel_sizes")
    strides = a.ints("strides", None) or [1] * n
    declared = pads(a, x.shape[2:], kernel_shape, strides, [1] * n)
    ceil_mode = bool(a.scalar("ceil_mode", False))
    extra = []
    for size, k, s, (b, e) in zip(x.shape[2:], kernel_shape, strides, declared):
        out = _out_size(size, k, s, b, e, ceil_mode)
        extra.append(max((out - 1) * s + k - (size + b + e), 0))
    return kernel_shape, strides, declared, extra


_SHARE = 1 << 17    # input elements each thread must have for a pool to be shared


def _padded(a, x, declared, extra, pad_value):
    """x padded as declared, then by the ceil-mode extra."""
    spatial = _allow_padded(a, x, declared, extra)
    return padded(x, spatial, pad_value)


def _allow_padded(a, x, declared, extra) -> list:
    """The (before, after) padding of each spatial dim, once x padded so fits in --max-memory."""
    spatial = [(b, e + x_) for (b, e), x_ in zip(declared, extra)]
    a.allow(x.shape[:x.ndim - len(spatial)] + tuple(n + b + e for n, (b, e) in zip(x.shape[x.ndim - len(spatial):], spatial)),
            8, "the padded input")
    return spatial


def _windows(a, x, kernel_shape, strides, declared, extra, pad_value):
    """(N, C, *out, *k) windows over x padded as declared, then by the ceil-mode extra."""
    return windows(_padded(a, x, declared, extra, pad_value), kernel_shape, strides, [1] * len(kernel_shape))


def _max_by_dim(padded, kernel_shape, strides, into=None):
    """The max over each window, one spatial dim at a time (a max is separable): per dim, one
    whole-array pass per kernel offset over strided slices, the rows reduced once for every
    window that shares them; the last dim's into `into` when given."""
    out = padded
    n = len(kernel_shape)
    for d, (k, s) in enumerate(zip(kernel_shape, strides)):
        axis = padded.ndim - n + d
        size = (out.shape[axis] - k) // s + 1
        if size <= 0:
            raise RunError(f"the kernel {tuple(kernel_shape)} does not fit the input (after padding)")
        lead = (slice(None),) * axis
        taken = [out[lead + (slice(j, j + (size - 1) * s + 1, s),)] for j in range(k)]
        if d == n - 1 and into is not None:
            reduced = into
            np.copyto(reduced, taken[0])
        else:
            reduced = np.array(taken[0])
        for part in taken[1:]:
            np.maximum(reduced, part, out=reduced)
        out = reduced
    return out


# The settings a pool's plan follows from besides its input's shape.
_SETTINGS = ("kernel_sizes", "strides", "pad_type", "pad", "ceil_mode")


class _MaxPlan:
    """A max_pool's choices for one input layout, worked out once (~80 us of Python a run on a
    ResNet-18's stem pool): the kernel, strides, padding and output sizes, the threads it is
    shared among, and the padded input's size for the memory check."""
    __slots__ = ("kernel_shape", "strides", "spatial", "sizes", "share", "needs")

    def __init__(self, a, x):
        self.kernel_shape, self.strides, declared, extra = _layout(a, x)
        self.spatial = [(b, e + x_) for (b, e), x_ in zip(declared, extra)]
        lead = x.ndim - len(self.spatial)
        self.sizes = [(size + b + e - k) // s + 1
                      for size, (b, e), k, s in zip(x.shape[lead:], self.spatial, self.kernel_shape, self.strides)]
        self.share = parallel.threads(x.size, _SHARE) if x.flags.c_contiguous and min(self.sizes) > 0 else 1
        self.needs = (need(x.shape[:lead] + tuple(n + b + e for n, (b, e) in zip(x.shape[lead:], self.spatial)), 8,
                           "the padded input"),)


@kernel("max_pool")
def max_pool(a):
    x = np.asarray(a("x"))
    key = (x.shape, x.dtype, x.flags.c_contiguous, parallel.sharing())
    plan = a.planned(key, lambda: _MaxPlan(a, x), _SETTINGS)
    a.allow_each(plan.needs)
    kernel_shape, strides, spatial, sizes, share = plan.kernel_shape, plan.strides, plan.spatial, plan.sizes, plan.share
    native = usable(a, x) if len(spatial) == 2 and min(sizes) > 0 else None
    if native is not None:
        compute = partial(_native_max_pool, native, kernel_shape=kernel_shape, strides=strides, spatial=spatial,
                          sizes=sizes, share=share)
        a.replayable_big(compute, "x")
        return compute(x)
    if share == 1:
        return _max_by_dim(padded(wide(x), spatial, -np.inf), kernel_shape, strides).astype(x.dtype, copy=False)
    # the channels (every dim before the spatial ones, as one) shared among the threads, each
    # padding its own
    lead = x.ndim - len(spatial)
    rows = x.reshape((-1,) + x.shape[lead:])
    y = np.empty([len(rows)] + sizes, wide(x[:0]).dtype)      # in the dtype wide() computes in

    def run(start: int, stop: int) -> None:
        _max_by_dim(padded(wide(rows[start:stop]), spatial, -np.inf), kernel_shape, strides, into=y[start:stop])
    parallel.split(len(rows), run, share)
    return y.reshape(x.shape[:lead] + y.shape[1:]).astype(x.dtype, copy=False)


def _native_max_pool(native, x, *, kernel_shape, strides, spatial, sizes, share: int):
    """max_pool of a C-contiguous fp32 x over its last two dims by the C kernel (the padding
    read in place, as never winning), its planes shared among the run's threads: parts of a
    few planes taken from a counter (on two threads a ResNet-18's stem pool took longer in
    halves, handed to a worker as a task, than on one)."""
    h, w = x.shape[-2:]
    planes = x.reshape(-1, h, w)
    y = np.empty((len(planes), *sizes), np.float32)
    (top, _), (left, _) = spatial
    run = partial(native.max_pool, planes, y, len(planes), h, w, *kernel_shape, *strides, top, left, *sizes)
    if share > 1:
        parallel.claimed(native, run, share, 0)
    else:
        run()
    return y.reshape(x.shape[:-2] + tuple(sizes))


@kernel("avg_pool")
def avg_pool(a):
    x = np.asarray(a("x"))
    kernel_shape, strides, declared, extra = layout = _layout(a, x)
    axes = tuple(range(x.ndim, x.ndim + len(kernel_shape)))
    total = _windows(a, wide(x), *layout, 0.0).sum(axis=axes)
    # The divisor counts the input, and the declared padding unless excluded; never the
    # ceil-mode extra past the padding's end.
    inside = np.pad(np.ones((1, 1) + x.shape[2:], np.float32), [(0, 0), (0, 0)] + declared,
                    constant_values=0.0 if a.scalar("exclude_padding_from_average", False) else 1.0)
    counts = _windows(a, inside, kernel_shape, strides, [(0, 0)] * len(declared), extra, 0.0).sum(axis=axes)
    return (total / counts).astype(x.dtype)


@kernel("l2_pool")
def l2_pool(a):
    x = np.asarray(a("x"))
    layout = _layout(a, x)
    win = _windows(a, wide(x), *layout, 0.0)
    return np.sqrt((win * win).sum(axis=tuple(range(win.ndim - len(layout[0]), win.ndim)))).astype(x.dtype)
