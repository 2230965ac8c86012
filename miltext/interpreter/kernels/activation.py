"""Activations, with the modes and constants of their op definitions."""
from __future__ import annotations

import math

import numpy as np

from .. import parallel
from ..fast_kernels import usable
from ..registry import kernel
from .elementwise import gelu_exact
from .linear import wide


def _x(a):
    return np.asarray(a("x"))


def _same_dtype(y, a):
    return y.astype(_x(a).dtype, copy=False)


def _sigmoid(x):
    with np.errstate(over="ignore"):
        return 1 / (1 + np.exp(-x))


@kernel("relu")
def relu(a):
    x = _x(a)
    if x.ndim and x.dtype.kind == "f":
        out = a.spare("x", x, x.shape, x.dtype)
        share = parallel.threads(x.size, _RELU_PIECE) if x.flags.c_contiguous else 1
        if share > 1:
            return parallel.chunks(_relu, (x,), np.empty_like(x) if out is None else out, share)
        if out is not None:
            return np.maximum(x, 0, out=out)
    return _same_dtype(np.maximum(x, 0), a)


def _relu(x, out):
    return np.maximum(x, 0, out=out)


# Elements each thread's part must have for the run's threads to share a kernel: relu is
# a quick pass over memory, the C kernels take longer per element (gelu, softmax), but
# layer_norm's pass over its rows is quick.
_RELU_PIECE = 1 << 17
_PIECE = 1 << 15



kernel("relu6")(lambda a: _same_dtype(np.clip(_x(a), 0, 6), a))
kernel("sigmoid")(lambda a: _sigmoid(_x(a)))
kernel("silu")(lambda a: _x(a) * _sigmoid(_x(a)))
kernel("softsign")(lambda a: _x(a) / (1 + np.abs(_x(a))))


@kernel("softplus")
def softplus(a):
    return np.logaddexp(0, _x(a))


@kernel("sigmoid_hard")
def sigmoid_hard(a):
    x = _x(a)
    return np.clip(a.scalar("alpha", 0.2) * x + a.scalar("beta", 0.5), 0, 1).astype(x.dtype)


@kernel("leaky_relu")
def leaky_relu(a):
    x = _x(a)
    return np.where(x >= 0, x, x * np.asarray(a.scalar("alpha", 0.01), x.dtype))


@kernel("elu")
def elu(a):
    x = _x(a)
    with np.errstate(over="ignore"):
        return np.where(x > 0, x, a.scalar("alpha", 1.0) * (np.exp(x) - 1)).astype(x.dtype)


@kernel("prelu")
def prelu(a):
    x, alpha = _x(a), np.asarray(a("alpha"))
    return np.where(x >= 0, x, x * _per_channel(alpha, x)).astype(x.dtype)


def _per_channel(values, x):
    """One value per channel, the second dim of x (the definitions' [B, C, ...]), laid over x."""
    shape = [1] * x.ndim
    shape[1] = np.asarray(values).size
    return np.asarray(values).reshape(shape)


@kernel("softplus_parametric")
def softplus_parametric(a):
    x = _x(a)
    alpha, beta = _per_channel(a("alpha"), x), _per_channel(a("beta"), x)
    return (alpha * np.logaddexp(0, beta * wide(x))).astype(x.dtype)


@kernel("linear_activation")
def linear_activation(a):
    x = _x(a)
    return (a.scalar("alpha") * x + a.scalar("beta", 0.0)).astype(x.dtype)


@kernel("scaled_tanh")
def scaled_tanh(a):
    x = _x(a)
    return (a.scalar("alpha", 1.0) * np.tanh(a.scalar("beta", 1.0) * x)).astype(x.dtype)


@kernel("clamped_relu")
def clamped_relu(a):
    x = _x(a)
    y = np.where(x >= 0, x, a.scalar("alpha", 0.0) * x)
    return np.minimum(y, a.scalar("beta", 6.0)).astype(x.dtype)


@kernel("thresholded_relu")
def thresholded_relu(a):
    x = _x(a)
    return np.where(x >= a.scalar("alpha", 1.0), x, 0).astype(x.dtype)     # x itself at alpha


@kernel("gelu")
def gelu(a):
    x = _x(a)
    mode = a.scalar("mode", "EXACT")
    native = usable(a, x)
    if native is not None and mode in ("EXACT", "TANH_APPROXIMATION"):
        tanh = mode != "EXACT"

        def compute(x):
            y = np.empty_like(x)
            parallel.by_parts(native, lambda counter: native.gelu(x, y, tanh, counter), x.size, _PIECE)
            return y
        return a.replayable(compute, "x")(x)
    if mode == "TANH_APPROXIMATION":
        y = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    elif mode == "SIGMOID_APPROXIMATION":
        y = x * _sigmoid(1.702 * x)
    else:
        y = gelu_exact(x)
    return y.astype(x.dtype, copy=False)


def _native_softmax(native, n: int):
    def compute(x):
        y = np.empty_like(x)
        parallel.by_parts(native, lambda counter: native.softmax(x, y, n, counter), x.size, _PIECE)
        return y
    return compute


_UNSHIFTED = 64.0    # x below this: exp(x) is finite in fp32, and no sum of them within memory overflows
_ENOUGH = 2.0 ** -20  # a sum of exps at least this: its row's largest exp is a normal fp32, far from 0


@kernel("softmax")
def softmax(a):
    x = _x(a)
    axis = a.scalar("axis", -1)
    native = usable(a, x)
    if native is not None and axis in (-1, x.ndim - 1) and x.shape[-1]:
        return a.replayable(_native_softmax(native, x.shape[-1]), "x")(x)
    if x.itemsize >= 4 and x.dtype.kind == "f" and x.size and x.max() < _UNSHIFTED:
        # the max need not be taken out (NumPy's max along a short axis is slow, and x - max
        # rounds x once more) when no exp overflows and no row's sum is near 0: only its
        # values below 1e-32 of the sum, which no fp32 sum sees, may lose digits
        e = np.exp(x)
        total = np.add.reduce(e, axis=axis, keepdims=True)
        if total.min() >= _ENOUGH:
            e /= total
            return e
    # an empty axis has no max (initial gives one), and its softmax is empty too
    top = (np.maximum.reduce(x, axis=axis, keepdims=True) if x.size else
           np.maximum.reduce(x, axis=axis, keepdims=True, initial=-np.inf))
    e = x - top
    np.exp(e, out=e)
    e /= np.add.reduce(e, axis=axis, keepdims=True)
    return e.astype(x.dtype, copy=False)
