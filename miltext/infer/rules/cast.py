"""cast: the input's shape, the dtype its `dtype` input names."""
from __future__ import annotations

from ... import dtypes
from ..errors import InferenceError
from ..registry import rule
from ..shapes import tensor


@rule("cast")
def cast(ops):
    x = ops.tensor("x")
    name = ops.scalar("dtype")
    if name not in dtypes.BY_NAME:
        raise InferenceError(f"unknown dtype {name!r}")
    value = ops.value("x", required=False)
    if value is not None and name.startswith(("int", "uint")) and x.dtype.startswith(("int", "uint")):
        # a size cast between integer types (coremltools does this around gather) keeps its value
        ops.output_values = [value if value.dtype == object else value.astype(dtypes.BY_NAME[name].numpy)]
    return [tensor(name, x.shape)]
