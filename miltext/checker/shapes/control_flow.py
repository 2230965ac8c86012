"""cond: its predicate is one bool."""
from __future__ import annotations

from ...ir import TensorType
from . import Mistake, rule
from .common import shown


@rule("cond")
def cond(ops):
    pred = ops.type("pred")
    if not isinstance(pred, TensorType) or pred.rank is not None:
        return
    if pred.dtype != "bool":
        raise Mistake("pred", f"cond's pred must be a bool, not {pred.dtype} "
                              f"(compare first: `less`, `equal`, ... give bools)")
    if any(d is not None and d != 1 for d in pred.shape):
        raise Mistake("pred", f"cond's pred must be a single bool, not a tensor of shape {shown(pred)}")
