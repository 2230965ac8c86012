"""matmul and linear: the contracted sizes agree; linear's weight is a matrix, its bias one
value per output feature."""
from __future__ import annotations

from . import Mistake, rule
from .common import shown


@rule("matmul")
def matmul(ops):
    x, y = ops.tensor("x"), ops.tensor("y")
    if not x.shape or not y.shape:
        key = "x" if not x.shape else "y"
        raise Mistake(key, f"matmul needs tensors of rank 1 or more; {key} is a scalar")
    if len(x.shape) == 1 and ops.scalar("transpose_x", default=False, of=bool) is True:
        raise Mistake("transpose_x", "x is a vector (rank 1), which matmul cannot transpose")
    tx = len(x.shape) > 1 and bool(ops.scalar("transpose_x", default=False, of=bool))
    ty = len(y.shape) > 1 and bool(ops.scalar("transpose_y", default=False, of=bool))
    inner_x = x.shape[-2] if tx else x.shape[-1]
    inner_y = y.shape[-1] if ty else (y.shape[-2] if len(y.shape) > 1 else y.shape[0])
    if inner_x is not None and inner_y is not None and inner_x != inner_y:
        which_x = "x's second-to-last dim" if tx else "x's last dim"
        which_y = "y's last dim" if ty else ("y's second-to-last dim" if len(y.shape) > 1 else "y's dim")
        raise Mistake("y", f"matmul of {shown(x)} by {shown(y)}: {which_x} ({inner_x}) must equal "
                           f"{which_y} ({inner_y})")


@rule("linear")
def linear(ops):
    x, weight = ops.tensor("x"), ops.tensor("weight")
    if len(weight.shape) != 2:
        raise Mistake("weight", f"linear's weight must have rank 2 (out features, in features), "
                                f"not {len(weight.shape)}")
    if not x.shape:
        raise Mistake("x", "linear's x must have rank 1 or more, not be a scalar")
    if x.shape[-1] is not None and weight.shape[1] is not None and x.shape[-1] != weight.shape[1]:
        raise Mistake("weight", f"linear of x {shown(x)} by weight {shown(weight)}: the weight's "
                                f"second dim ({weight.shape[1]}) must equal x's last dim ({x.shape[-1]})")
    if ops.has("bias"):
        bias = ops.tensor("bias")
        if len(bias.shape) != 1 or (bias.shape[0] is not None and weight.shape[0] is not None
                                    and bias.shape[0] != weight.shape[0]):
            raise Mistake("bias", f"linear's bias must be ({weight.shape[0]}), one value per output "
                                  f"feature of weight {shown(weight)}, not {shown(bias)}")
