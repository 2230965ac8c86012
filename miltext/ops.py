"""The table of MIL ops per opset (miltext/data/ops.json, made by scripts/gen_op_table.py from
coremltools' op registry): input names in declaration order, required or optional, dtypes."""
from __future__ import annotations

import json
import os
from functools import lru_cache

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "ops.json")


@lru_cache(maxsize=1)
def table() -> dict:
    with open(_PATH, encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=None)
def input_order(op_type: str) -> dict:
    """Rank of each input name of `op_type` as the op declares them, newest opset first;
    empty for an op the table does not know."""
    order: dict = {}
    for variant in reversed(table()["ops"].get(op_type, [])):
        for spec in variant["inputs"]:
            order.setdefault(spec["name"], len(order))
    return order


@lru_cache(maxsize=None)
def variant(op_type: str, opset: str) -> dict | None:
    """The definition of `op_type` in force in `opset`, or None when the opset lacks it."""
    for v in table()["ops"].get(op_type, []):
        if opset in v["opsets"]:
            return v
    return None


@lru_cache(maxsize=None)
def params(op_type: str, opset: str) -> dict:
    """The inputs of `op_type` in `opset` by name (empty when the opset lacks the op)."""
    return {p["name"]: p for p in (variant(op_type, opset) or {}).get("inputs", ())}
