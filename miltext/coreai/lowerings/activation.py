"""Activations: relu, sigmoid, silu, gelu, softmax have namesakes; the others are written with
elementwise ops."""
from __future__ import annotations

import numpy as np

from ..table import lowers
from .common import binary, name_of, scalar


@lowers("relu", "sigmoid", "silu")
def same(low, op):
    low.bind(op, low.emit(op.type, [low.tensor(op, "x")], low.out(op), hint=name_of(op)))


@lowers("gelu")
def gelu(low, op):
    mode = str(low.known_value(op, "mode", np.asarray("EXACT"))).upper()
    x = low.tensor(op, "x")
    if mode == "SIGMOID_APPROXIMATION":       # x * sigmoid(1.702 x)
        s = low.emit("sigmoid", [binary(low, "mul", x, scalar(low, 1.702, x.dtype))], (x.dtype, x.shape))
        low.bind(op, low.emit("mul", [x, s], low.out(op), hint=name_of(op)))
        return
    approx = "tanh" if mode == "TANH_APPROXIMATION" else "none"
    low.bind(op, low.emit("gelu", [x], low.out(op), f"approximate = #coreai.approximate<{approx}>",
                          hint=name_of(op)))


@lowers("softmax")
def softmax(low, op):
    x = low.tensor(op, "x")
    axis = int(low.known_value(op, "axis", -1))
    low.bind(op, low.emit("softmax", [x, low.ints(axis, "axis")], low.out(op), hint=name_of(op)))


@lowers("leaky_relu")
def leaky_relu(low, op):
    """max(x, alpha x) (alpha below 1)."""
    x = low.tensor(op, "x")
    alpha = float(low.known_value(op, "alpha", 0.01))
    ax = binary(low, "mul", x, scalar(low, alpha, x.dtype))
    low.bind(op, binary(low, "maximum" if alpha <= 1 else "minimum", x, ax, hint=name_of(op)))


@lowers("elu")
def elu(low, op):
    """x > 0 ? x : alpha (exp(x) - 1)."""
    x = low.tensor(op, "x")
    alpha = float(low.known_value(op, "alpha", 1.0))
    e = low.emit("exp", [x], (x.dtype, x.shape))
    neg = binary(low, "mul", binary(low, "sub", e, scalar(low, 1, x.dtype)), scalar(low, alpha, x.dtype))
    cond = binary(low, "greater", x, scalar(low, 0, x.dtype), "bool")
    low.bind(op, low.emit("where", [cond, x, neg], low.out(op), hint=name_of(op)))


@lowers("softplus")
def softplus(low, op):
    """log(1 + exp(x))."""
    x = low.tensor(op, "x")
    e = low.emit("exp", [x], (x.dtype, x.shape))
    low.bind(op, low.emit("log", [binary(low, "add", e, scalar(low, 1, x.dtype))], low.out(op),
                          hint=name_of(op)))


@lowers("relu6")
def relu6(low, op):
    x = low.tensor(op, "x")
    r = low.emit("relu", [x], (x.dtype, x.shape))
    low.bind(op, binary(low, "minimum", r, scalar(low, 6, x.dtype), hint=name_of(op)))


@lowers("sigmoid_hard")
def sigmoid_hard(low, op):
    """min(max(alpha x + beta, 0), 1)."""
    x = low.tensor(op, "x")
    alpha = float(low.known_value(op, "alpha", 0.2))
    beta = float(low.known_value(op, "beta", 0.5))
    y = binary(low, "add", binary(low, "mul", x, scalar(low, alpha, x.dtype)), scalar(low, beta, x.dtype))
    y = binary(low, "maximum", y, scalar(low, 0, x.dtype))
    low.bind(op, binary(low, "minimum", y, scalar(low, 1, x.dtype), hint=name_of(op)))


@lowers("thresholded_relu")
def thresholded_relu(low, op):
    """x where x > alpha, else 0."""
    x = low.tensor(op, "x")
    alpha = float(low.known_value(op, "alpha", 1.0))
    cond = binary(low, "greater", x, scalar(low, alpha, x.dtype), "bool")
    zero = low.constant(np.zeros(x.shape), x.dtype, "zeros")
    low.bind(op, low.emit("where", [cond, x, zero], low.out(op), hint=name_of(op)))
