"""classify: the top class (a string or an int64, as the classes are) and a dict of them."""
from __future__ import annotations

from ...ir import DictType, ListType, TensorType
from ..errors import InferenceError
from ..registry import rule
from ..shapes import tensor


@rule("classify")
def classify(ops):
    classes = ops.type("classes")
    if not isinstance(classes, ListType) or not isinstance(classes.element, TensorType):
        raise InferenceError("`classes` is not a list of strings or int64s")
    label = tensor(classes.element.dtype, ())
    return [label, DictType(label, tensor("fp64", ()))]
