"""Normalizations, computed in fp32 at least, the result in the input's dtype."""
from __future__ import annotations

import numpy as np

from ..registry import kernel
from .linalg import wide


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
    axes = a.ints("axes", None)
    axes = tuple(range(x.ndim)) if axes is None else tuple(ax % x.ndim for ax in axes)
    xf = wide(x)
    y = (xf - xf.mean(axis=axes, keepdims=True)) / np.sqrt(xf.var(axis=axes, keepdims=True) + a.scalar("epsilon", 1e-5))
    # gamma and beta have the normalized dims' shape: laid over x with 1 for the other dims
    # (the definition's rule), so axes need not be the trailing ones
    laid = [x.shape[i] if i in axes else 1 for i in range(x.ndim)]
    gamma, beta = a("gamma", None), a("beta", None)
    if gamma is not None:
        y = y * wide(gamma).reshape(laid)
    if beta is not None:
        y = y + wide(beta).reshape(laid)
    return y.astype(x.dtype)


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
    size = a.scalar("size")
    alpha, beta, k = a.scalar("alpha", 1e-4), a.scalar("beta", 0.75), a.scalar("k", 1.0)
    sq = wide(x) ** 2
    half = (size - 1) // 2
    padded = np.pad(sq, [(0, 0), (half, size - 1 - half)] + [(0, 0)] * (x.ndim - 2))
    total = sum(padded[:, i:i + x.shape[1]] for i in range(size))
    return (wide(x) / (k + alpha / size * total) ** beta).astype(x.dtype)
