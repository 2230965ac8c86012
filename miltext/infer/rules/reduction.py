"""Reductions over axes (all of them when `axes` is not given), keeping them as 1 or not."""
from __future__ import annotations

from ..registry import rule
from ..shapes import axis, tensor

REDUCTIONS = ("reduce_l1_norm", "reduce_l2_norm", "reduce_log_sum", "reduce_log_sum_exp",
              "reduce_max", "reduce_mean", "reduce_min", "reduce_prod", "reduce_sum",
              "reduce_sum_square")


def _reduced(shape, axes, keep_dims: bool):
    drop = set(range(len(shape))) if axes is None else {axis(a, len(shape)) for a in axes}
    if keep_dims:
        return [1 if i in drop else d for i, d in enumerate(shape)]
    return [d for i, d in enumerate(shape) if i not in drop]


@rule(*REDUCTIONS)
def reduction(ops):
    x = ops.tensor("x")
    axes = ops.ints("axes", default=None)
    return [tensor(x.dtype, _reduced(x.shape, axes, bool(ops.scalar("keep_dims", default=False, of=bool))))]


@rule("reduce_argmax", "reduce_argmin")
def arg_reduction(ops):
    x = ops.tensor("x")
    a = ops.scalar("axis", default=-1, of=int)
    keep_dims = bool(ops.scalar("keep_dims", default=False, of=bool))
    dtype = ops.dtype("output_dtype", default="int32")
    return [tensor(dtype, _reduced(x.shape, [a], keep_dims))]
