"""Activations: the output is the input's type."""
from __future__ import annotations

from ..registry import rule
from ..shapes import tensor

ACTIVATIONS = ("relu", "relu6", "sigmoid", "sigmoid_hard", "silu", "softplus", "softsign", "elu",
               "gelu", "leaky_relu", "linear_activation", "prelu", "scaled_tanh",
               "softplus_parametric", "thresholded_relu", "clamped_relu")


@rule(*ACTIVATIONS)
def activation(ops):
    x = ops.tensor("x")
    return [tensor(x.dtype, x.shape)]
