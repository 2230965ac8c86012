"""linear and matmul: the dialect has no linear and no transposes inside its matmul, so
linear is x @ W^T (+ bias) with a broadcasting batch matmul, and matmul's transpose_x/y are
transposes of the last two dims first."""
from __future__ import annotations

import numpy as np

from ..table import lowers
from .common import binary, name_of, reshape, transpose


def _matmul(low, x, y, hint):
    squeeze_x = len(x.shape) == 1
    squeeze_y = len(y.shape) == 1
    if squeeze_x:
        x = reshape(low, x, (1,) + x.shape)
    if squeeze_y:
        y = reshape(low, y, y.shape + (1,))
    batch = tuple(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]))
    shape = batch + (x.shape[-2], y.shape[-1])
    name = "batch_matmul" if x.shape[:-2] == y.shape[:-2] else "coreai.decomposable.broadcasting_batch_matmul"
    out = low.emit(name, [x, y], (x.dtype, shape), hint=hint)
    final = shape
    if squeeze_x:
        final = final[:-2] + final[-1:]
    if squeeze_y:
        final = final[:-1]
    return reshape(low, out, final, hint=hint)


def _last_two(v) -> list:
    n = len(v.shape)
    return list(range(n - 2)) + [n - 1, n - 2]


@lowers("linear")
def linear(low, op):
    x = low.tensor(op, "x")
    if low.is_known(op, "weight"):       # transposed here, once, not at every run
        w = np.asarray(low.known_value(op, "weight"))
        wt = low.constant(np.ascontiguousarray(w.T), low.mil_type(low.binding(op, "weight")).dtype, "weight_t")
    else:
        wt = transpose(low, low.tensor(op, "weight"), [1, 0])
    y = _matmul(low, x, wt, name_of(op))
    if low.has(op, "bias"):
        y = binary(low, "add", y, low.tensor(op, "bias"), hint=name_of(op))
    low.bind(op, y)


@lowers("matmul")
def matmul(low, op):
    x, y = low.tensor(op, "x"), low.tensor(op, "y")
    if bool(low.known_value(op, "transpose_x", False)) and len(x.shape) > 1:
        x = transpose(low, x, _last_two(x))
    if bool(low.known_value(op, "transpose_y", False)) and len(y.shape) > 1:
        y = transpose(low, y, _last_two(y))
    low.bind(op, _matmul(low, x, y, name_of(op)))
