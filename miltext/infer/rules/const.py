"""const: the type of its value."""
from __future__ import annotations

import copy

from ...ir import TensorType
from ..errors import InferenceError
from ..registry import rule


@rule("const")
def const(ops):
    value = ops.op.attributes.get("val")
    if value is None or value.type is None:
        raise InferenceError("const has no typed `val`")
    t = value.type
    if isinstance(t, TensorType):   # the value's type without its attributes (cheap: no copy of them)
        return [TensorType(t.dtype, t.shape, rank=t.rank)]
    return [copy.deepcopy(t)]
