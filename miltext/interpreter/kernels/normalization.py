"""Normalizations, computed in fp32 at least, the result in the input's dtype."""
from __future__ import annotations

import numpy as np

from ..errors import RunError
from ..fast_kernels import usable
from ..parallel import by_parts
from ..registry import kernel
from .linear import wide


def _channel(v, ndim):
    return wide(v).reshape((1, -1) + (1,) * (ndim - 2))


def _per_channel_affine(a, y, ndim):
    """y scaled by gamma and shifted by beta, one of each per channel (dim 1), when given."""
    gamma, beta = a("gamma", None), a("beta", None)
    if gamma is not None:
        y = y * _channel(gamma, ndim)
    if beta is not None:
        y = y + _channel(beta, ndim)
    return y


@kernel("batch_norm")
def batch_norm(a):
    x = np.asarray(a("x"))
    mean, var = _channel(a("mean"), x.ndim), _channel(a("variance"), x.ndim)
    y = (wide(x) - mean) / np.sqrt(var + a.scalar("epsilon", 1e-5))
    return _per_channel_affine(a, y, x.ndim).astype(x.dtype)


@kernel("instance_norm")
def instance_norm(a):
    x = np.asarray(a("x"))
    axes = tuple(range(2, x.ndim))
    xf = wide(x)
    y = (xf - xf.mean(axis=axes, keepdims=True)) / np.sqrt(xf.var(axis=axes, keepdims=True) + a.scalar("epsilon", 1e-5))
    return _per_channel_affine(a, y, x.ndim).astype(x.dtype)


@kernel("layer_norm")
def layer_norm(a):
    x = np.asarray(a("x"))
    ndim = x.ndim
    axes = a.ints("axes", None)
    if axes is None:
        axes = tuple(range(ndim))
    elif all(-ndim <= ax < ndim for ax in axes):
        axes = tuple(ax % ndim for ax in axes)
    else:
        raise RunError(f"axes {axes} are not all axes of x, which has rank {ndim}")
    count = 1
    for ax in axes:
        count *= x.shape[ax]
    native = usable(a, x)
    if native is not None and axes == tuple(range(ndim - len(axes), ndim)):
        y = _native_layer_norm(native, a, x, count)
        if y is not None:
            return y
    xf = wide(x)
    # mean and var as NumPy's take them (a sum, then / count), the centred values reused
    count = np.array(count, xf.dtype)      # a 0-dim operand: NumPy converts a Python number at every call
    y = xf - np.add.reduce(xf, axis=axes, keepdims=True) / count
    var = np.add.reduce(np.square(y), axis=axes, keepdims=True)
    var /= count
    var += a.scalar("epsilon", 1e-5)
    y /= np.sqrt(var, out=var)
    # gamma and beta have the normalized dims' shape: laid over x with 1 for the other dims
    # (the definition's rule), so axes need not be the trailing ones (when they are, as they
    # mostly are, the shape lays itself)
    trailing = x.shape[ndim - len(axes):]
    laid = trailing if axes == tuple(range(ndim - len(axes), ndim)) else [
        x.shape[i] if i in axes else 1 for i in range(ndim)]
    gamma, beta = a("gamma", None), a("beta", None)
    if gamma is not None:
        gamma = wide(gamma)
        y *= gamma if gamma.shape == laid else gamma.reshape(laid)
    if beta is not None:
        beta = wide(beta)
        y += beta if beta.shape == laid else beta.reshape(laid)
    return y if y.dtype == x.dtype else y.astype(x.dtype)


def _native_layer_norm(native, a, x, count: int):
    """layer_norm over x's trailing `count` elements by the C kernel, when gamma and beta
    (if given) are float32 arrays of those elements; else None."""
    gamma, beta = a("gamma", None), a("beta", None)
    for v in (gamma, beta):
        if v is not None and (type(v) is not np.ndarray or v.dtype != np.float32 or v.size != count
                              or not v.flags.c_contiguous):
            return None
    epsilon = float(a.scalar("epsilon", 1e-5))

    def compute(x):
        y = np.empty_like(x)
        by_parts(native, lambda counter: native.layer_norm(x, y, gamma, beta, epsilon, count, counter), x.size, _PIECE)
        return y
    return a.replayable(compute, "x")(x)


# Elements each thread's part must have for the run's threads to share a layer_norm (a worker
# spinning between pieces joins the C call in microseconds: a GPT-2 block's 128 x 768 is shared)
_PIECE = 1 << 15


@kernel("l2_norm")
def l2_norm(a):
    """x over the root of (its sum of squares + epsilon), the last three dims taken together;
    the dims before them are batch (the definition's [*B, *D] with rank(D) == 3)."""
    x = np.asarray(a("x"))
    axes = tuple(range(max(x.ndim - 3, 0), x.ndim))
    xf = wide(x)
    norm = np.sqrt((xf * xf).sum(axis=axes, keepdims=True) + a.scalar("epsilon", 1e-6))
    return (xf / norm).astype(x.dtype)


@kernel("local_response_norm")
def local_response_norm(a):
    """x / (k + alpha / size * the sum of squares over `size` neighbouring channels) ** beta."""
    x = np.asarray(a("x"))
    size = int(a.scalar("size"))
    if size < 1 or x.ndim < 2:
        raise RunError(f"needs a size of 1 or more and x of rank 2 or more, not size {size} on rank {x.ndim}")
    alpha, beta, k = a.scalar("alpha", 1e-4), a.scalar("beta", 0.75), a.scalar("k", 1.0)
    # channel c sums channels c - half .. c + size - 1 - half (those that exist): a difference
    # of running sums, so neither memory nor time grows with size
    half = (size - 1) // 2
    channels = x.shape[1]
    running = np.cumsum(x.astype(np.float64) ** 2, axis=1)
    running = np.concatenate([np.zeros_like(running[:, :1]), running], axis=1)
    c = np.arange(channels)
    total = running[:, np.minimum(c + size - half, channels)] - running[:, np.maximum(c - half, 0)]
    return (wide(x) / (k + alpha / size * total) ** beta).astype(x.dtype)
