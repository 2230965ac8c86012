"""What coremltools' inference says when it refuses an op, in miltext's words: its message is
read for what it is about (which input, what kind of fault), never shown as it is, since it
names a tiny program miltext built to ask it (`In op, of type add, named inferred`)."""
from __future__ import annotations

import re

from .compat import describe


def translate(op, operands, detail: str) -> tuple[str | None, str]:
    """(the input at fault or None, a message) for coremltools' refusal `detail` of `op`."""
    key = _input_named(op, detail)
    low = detail.lower()
    if "rank" in low:
        what = "rank"
    elif "shape" in low or "dim" in low or "size" in low or "broadcast" in low:
        what = "shape"
    elif "dtype" in low or "data type" in low:
        what = "dtype"
    else:
        what = "value"
    others = ", ".join(f"{k} {_input_text(operands, k)}" for k in op.inputs if k != key)
    if key is not None:
        context = f" (with {others})" if others else ""
        return key, f"{op.type} cannot take {key}={_input_text(operands, key)}{context}: " \
                    f"the op's definition refuses this {what}"
    return None, f"{op.type} cannot take these inputs ({others}): the op's definition refuses them"


def _input_named(op, detail: str) -> str | None:
    """The one input of the op coremltools' message names, if it names exactly one."""
    keys = [k for k in list(op.inputs) + [a for a in op.attributes if a != "name"]
            if re.search(rf"(?<![A-Za-z0-9_]){re.escape(k)}(?![A-Za-z0-9_])", detail)]
    return keys[0] if len(keys) == 1 else None


def _input_text(operands, key: str) -> str:
    types = operands.types(key)
    values = operands.values(key)
    if len(types) == 1 and values[0] is not None and values[0].size <= 8:
        v = values[0]
        return repr(v.item()) if v.size == 1 and v.ndim == 0 else str(v.tolist())
    return ", ".join(describe(t) for t in types) or "nothing"
