"""shape and fill: a tensor's shape as a value, and a tensor made to a shape value. The value
of `shape` is kept (unknown dims as None), so the ops that take it back as a shape know it."""
from __future__ import annotations

import numpy as np

from ..errors import Unsupported
from ..registry import rule
from ..shapes import tensor


@rule("shape")
def shape(ops):
    x = ops.tensor("x")
    ops.output_values = [np.array(x.shape, dtype=object if None in x.shape else np.int32)]
    return [tensor(ops.scalar("output_dtype", default="int32"), (len(x.shape),))]


@rule("fill")
def fill(ops):
    value_type = ops.tensor("value")
    dims = ops.ints("shape", default=None)
    if dims is None:
        shape_type = ops.tensor("shape")
        if len(shape_type.shape) != 1 or shape_type.shape[0] is None:
            raise Unsupported("a shape of unknown length")
        dims = [None] * shape_type.shape[0]
    return [tensor(value_type.dtype, dims)]
