"""layer_norm, batch_norm, instance_norm, l2_norm: written out with reductions and
elementwise ops (the dialect's layer_norm is a composite graph; the expression is the same)."""
from __future__ import annotations

import numpy as np

from ..table import lowers
from .common import axes_of, binary, name_of, reshape, scalar
from .reduction import reduced


def _affine(low, op, y, axes, key):
    """y times gamma, or plus beta, the parameter shaped to broadcast over the normalized axes."""
    if not low.has(op, key):
        return y
    shape = tuple(d if i in axes else 1 for i, d in enumerate(y.shape))
    if low.is_known(op, key):
        p = np.asarray(low.known_value(op, key))
        v = low.constant(p.reshape(shape), low.mil_type(low.binding(op, key)).dtype, key)
    else:
        v = reshape(low, low.tensor(op, key), shape)
    return binary(low, "mul" if key == "gamma" else "add", y, v)


def normalized(low, x, axes, epsilon):
    mean = reduced(low, "reduce_mean", x, axes)
    centred = binary(low, "sub", x, mean)
    var = reduced(low, "reduce_mean", low.emit("mul", [centred, centred], (x.dtype, x.shape)), axes)
    inv = low.emit("rsqrt", [binary(low, "add", var, scalar(low, epsilon, x.dtype))], (x.dtype, var.shape))
    return binary(low, "mul", centred, inv)


@lowers("layer_norm")
def layer_norm(low, op):
    x = low.tensor(op, "x")
    axes = axes_of(op, low, "axes", len(x.shape))
    y = normalized(low, x, axes, float(low.known_value(op, "epsilon", 1e-5)))
    y = _affine(low, op, _affine(low, op, y, axes, "gamma"), axes, "beta")
    low.bind(op, reshape(low, y, low.out(op)[1], hint=name_of(op)))


@lowers("instance_norm")
def instance_norm(low, op):
    x = low.tensor(op, "x")
    axes = list(range(2, len(x.shape)))
    y = normalized(low, x, axes, float(low.known_value(op, "epsilon", 1e-5)))
    y = _affine(low, op, _affine(low, op, y, [1], "gamma"), [1], "beta")
    low.bind(op, reshape(low, y, low.out(op)[1], hint=name_of(op)))


@lowers("batch_norm")
def batch_norm(low, op):
    """(x - mean) / sqrt(variance + epsilon) * gamma + beta, per channel (dim 1)."""
    x = low.tensor(op, "x")
    eps = float(low.known_value(op, "epsilon", 1e-5))
    shape = tuple(d if i == 1 else 1 for i, d in enumerate(x.shape))
    keys = ("mean", "variance", "gamma", "beta")
    if all(low.is_known(op, k) or not low.has(op, k) for k in keys):
        c = x.shape[1]
        mean, var = (np.asarray(low.known_value(op, k), np.float64) for k in keys[:2])
        gamma = np.asarray(low.known_value(op, "gamma", np.ones(c)), np.float64)
        beta = np.asarray(low.known_value(op, "beta", np.zeros(c)), np.float64)
        scale = gamma / np.sqrt(var + eps)
        y = binary(low, "mul", x, low.constant(scale.reshape(shape), x.dtype, "bn_scale"))
        y = binary(low, "add", y, low.constant((beta - mean * scale).reshape(shape), x.dtype, "bn_shift"))
        low.bind(op, reshape(low, y, low.out(op)[1], hint=name_of(op)))
        return
    m, v = (reshape(low, low.tensor(op, k), shape) for k in keys[:2])
    y = binary(low, "sub", x, m)
    inv = low.emit("rsqrt", [binary(low, "add", v, scalar(low, eps, x.dtype))], (x.dtype, shape))
    y = binary(low, "mul", y, inv)
    y = _affine(low, op, _affine(low, op, y, [1], "gamma"), [1], "beta")
    low.bind(op, reshape(low, y, low.out(op)[1], hint=name_of(op)))


@lowers("l2_norm")
def l2_norm(low, op):
    """x / max(sqrt(sum(x^2)), epsilon) over all dims but the first (rank - 3 ... for images)."""
    x = low.tensor(op, "x")
    axes = list(range(max(len(x.shape) - 3, 0), len(x.shape)))
    eps = float(low.known_value(op, "epsilon", 1e-6))
    ss = reduced(low, "reduce_sum", low.emit("mul", [x, x], (x.dtype, x.shape)), axes)
    norm = binary(low, "maximum", low.emit("sqrt", [ss], (x.dtype, ss.shape)), scalar(low, eps, x.dtype))
    low.bind(op, binary(low, "divide", x, norm, hint=name_of(op)))
