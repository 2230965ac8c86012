"""matmul, linear and einsum: contracted dims disappear, batch dims broadcast."""
from __future__ import annotations

import re

from ...ir import TensorType
from ..errors import InferenceError, Unsupported
from ..registry import rule
from ..shapes import broadcast, tensor
from ..symbols import known


@rule("matmul")
def matmul(ops):
    x, y = ops.tensor("x"), ops.tensor("y")
    xs, ys = list(x.shape), list(y.shape)
    if not xs or not ys:
        raise InferenceError("matmul needs tensors of rank 1 or more")
    if len(xs) > 1 and ops.scalar("transpose_x", default=False, of=bool):
        xs[-1], xs[-2] = xs[-2], xs[-1]
    if len(ys) > 1 and ops.scalar("transpose_y", default=False, of=bool):
        ys[-1], ys[-2] = ys[-2], ys[-1]
    # a vector is a one-row (x) or one-column (y) matrix whose extra dim the result drops
    x_vector, y_vector = len(xs) == 1, len(ys) == 1
    xs = [1] + xs if x_vector else xs
    ys = ys + [1] if y_vector else ys
    _same_size(xs[-1], ys[-2], "matmul")
    out = list(broadcast(xs[:-2], ys[:-2])) + [xs[-2], ys[-1]]
    if y_vector:
        out.pop(-1)
    if x_vector:
        out.pop(-2 if not y_vector else -1)
    return [tensor(x.dtype, out)]


@rule("linear")
def linear(ops):
    x, weight = ops.tensor("x"), ops.tensor("weight")
    if len(weight.shape) != 2 or not x.shape:
        raise InferenceError("linear needs a weight of rank 2")
    _same_size(x.shape[-1], weight.shape[1], "linear")
    return [tensor(x.dtype, x.shape[:-1] + (weight.shape[0],))]


@rule("einsum")
def einsum(ops):
    operands = ops.types("values")
    if not all(isinstance(t, TensorType) and t.rank is None for t in operands):
        raise Unsupported("operands of unknown rank")
    equation = ops.scalar("equation", of=str).replace(" ", "")
    found = re.fullmatch(r"([a-zA-Z,]+)->([a-zA-Z]*)", equation)
    if not found:
        raise Unsupported("an equation with ellipsis or an implied output")
    inputs = found.group(1).split(",")
    if len(inputs) != len(operands):
        raise InferenceError(f"the equation names {len(inputs)} operands, einsum has {len(operands)}")
    sizes: dict = {}
    for letters, t in zip(inputs, operands):
        if len(letters) != len(t.shape):
            raise InferenceError(f"{letters!r} does not match a tensor of rank {len(t.shape)}")
        for letter, d in zip(letters, t.shape):
            sizes[letter] = broadcast((sizes.get(letter, 1),), (d,))[0] if letter in sizes else d
    return [tensor(operands[0].dtype, [sizes[letter] for letter in found.group(2)])]


def _same_size(a, b, op_type: str) -> None:
    if known(a) and known(b) and a != b:
        raise InferenceError(f"{op_type} contracts a dim of {a} with a dim of {b}")
