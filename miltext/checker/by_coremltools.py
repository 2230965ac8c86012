"""coremltools' inference, for the ops miltext's own rules do not cover (when coremltools is
installed): asked once per distinct question, its refusals said in miltext's words. Its
message is read for what it is about (which input, what kind of fault), never shown as it is,
since it names a tiny program miltext built to ask it (`In op, of type add, named inferred`)."""
from __future__ import annotations

import importlib.util
import re

from ..infer.errors import InferenceError, Refused
from ..infer.symbols import concrete, fully_known
from ..ir import Value
from .compat import describe


class Inference:
    def __init__(self, from_print: bool):
        self.from_print = from_print
        self.installed = None     # asked once, when first needed
        self.cache: dict = {}     # its answers, by what it was asked

    def types(self, op, operands):
        """The output types coremltools gives the op, None when it cannot be asked; raises
        Refused when it refuses the op's inputs."""
        if self.installed is None:
            self.installed = importlib.util.find_spec("coremltools") is not None
        if not self.installed or (self.from_print and any(
                isinstance(b, Value) for bindings in op.inputs.values() for b in bindings)):
            return None                # a print's literals have guessed dtypes
        from ..infer import coremltools_rules
        key = _question(op, operands)
        if key is not None and key in self.cache:
            answer = self.cache[key]
        else:
            try:
                answer = (coremltools_rules.infer(operands), operands.output_values)
            except Refused as e:
                answer = e
            except InferenceError:
                answer = None          # what miltext cannot hand coremltools is no mistake
            if key is not None:
                self.cache[key] = answer
        if isinstance(answer, Refused):
            if _stood_in(op, operands):
                return None            # it was given zeros for a weight not at hand
            raise answer
        if answer is None:
            return None
        operands.output_values = answer[1]
        return answer[0]


def _stood_in(op, operands) -> bool:
    """Whether coremltools was given a stand-in for an input: a const whose value is not at hand."""
    return any(c and v is None for key in op.inputs
               for c, v in zip(operands.consts(key), operands.values(key)))


def _question(op, operands):
    """What coremltools is asked about an op, as a key: its type, opset and each input's types
    and (small) values; None when a value is too big to be part of the key."""
    parts = [op.type, operands.opset]
    for key in list(op.inputs) + sorted(k for k in op.attributes if k != "name"):
        for t, v in zip(operands.types(key), operands.values(key)):
            if v is not None and v.size > 64:
                return None
            parts.append((key, repr(t), None if v is None else (v.dtype.str, v.shape, v.tobytes()
                                                                 if v.dtype != object else repr(v.tolist()))))
    return tuple(parts)


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
    types = [concrete(t) for t in operands.types(key)]   # a size known only at run time is `?`
    values = operands.values(key)
    if len(types) == 1 and fully_known(values[0]) and values[0].size <= 8:
        v = values[0]
        return repr(v.item()) if v.size == 1 and v.ndim == 0 else str(v.tolist())
    return ", ".join(describe(t) for t in types) or "nothing"
