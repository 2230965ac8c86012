"""shape and fill: a tensor's shape as a value, and a tensor made to a shape value. The value
of `shape` is kept (unknown dims as their Syms), so the ops that take it back as a shape know it."""
from __future__ import annotations

import numpy as np

from ..errors import Unsupported
from ..registry import rule
from ..shapes import tensor
from ..symbols import known


@rule("shape")
def shape(ops):
    x = ops.tensor("x")
    ops.output_values = [np.array(x.shape, dtype=np.int32 if all(map(known, x.shape)) else object)]
    return [tensor(ops.dtype("output_dtype", default="int32"), (len(x.shape),))]


@rule("fill")
def fill(ops):
    value_type = ops.tensor("value")
    dims = ops.sizes("shape", default=None)
    if dims is None:
        shape_type = ops.tensor("shape")
        if len(shape_type.shape) != 1 or not known(shape_type.shape[0]):
            raise Unsupported("a shape of unknown length")
        dims = [None] * shape_type.shape[0]      # a shape of known length: the rank is known
    return [tensor(value_type.dtype, dims)]
