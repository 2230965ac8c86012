"""An op's inputs against its definition in the op table, with the types inference gives them
(declared or not): each of a dtype the op takes, the inputs of one type domain of one dtype,
the inputs it needs constant constant, its string inputs among the strings it knows."""
from __future__ import annotations

from .. import dtypes
from ..ir import TensorType, Value
from . import enums
from .shapes import Mistake
from .suggest import closest


def check(ops, variant: dict, constant, from_print: bool) -> None:
    """Raises Mistake for the first input of `ops` that its `variant` refuses. `constant(name)`
    says whether a var is known at compile time."""
    op = ops.op
    domains: dict = {}
    for p in variant["inputs"]:
        key = p["name"]
        if not ops.has(key):
            continue
        bindings = op.inputs.get(key) or [op.attributes[key]]
        types = ops.types(key)
        if p["kind"] == "tensor":
            for b, t in zip(bindings, types):
                if not isinstance(t, TensorType):
                    continue
                guessed = from_print and isinstance(b, Value)
                if p["dtypes"] and t.dtype not in p["dtypes"] and not (guessed and _same_family(t.dtype, p["dtypes"])):
                    raise Mistake(key, f"input {key!r} of {op.type} is {_dtype_text(t)}; {op.type} takes "
                                       f"{_either(p['dtypes'])} there", rule="input-dtype")
                if p.get("domain") and not guessed:
                    domains.setdefault(p["domain"], []).append((key, t.dtype))
        if p["const"] and key in op.inputs:
            for b in op.inputs[key]:
                if isinstance(b, str) and not constant(b):
                    raise Mistake(key, f"input {key!r} of {op.type} must be known when the model is "
                                       f"compiled (a const or a literal), but %{b} is computed at run "
                                       "time", rule="const-input")
        choices = enums.allowed(op.type, key, ops.opset)
        if choices is not None:
            _enum(ops, key, choices)
    for domain, found in domains.items():
        first_key, first = found[0]
        for key, dtype in found[1:]:
            if dtype != first:
                raise Mistake(key, f"{op.type} takes {first_key} and {key} of one dtype, but {first_key} "
                                   f"is {first} and {key} is {dtype}", rule="operand-dtypes")


def _enum(ops, key: str, choices) -> None:
    value = ops.value(key, required=False)
    if value is None or value.size != 1:
        return
    given = value.reshape(-1)[0]
    if not isinstance(given, str) or given in choices:
        return
    hint = enums.DTYPE_ALIASES.get(given.lower()) if key.endswith("dtype") else None
    hint = hint if hint in choices else closest(given, choices)
    mean = f"; did you mean \"{hint}\"?" if hint else ""
    what = "a dtype" if key.endswith("dtype") else f"a {key}"
    raise Mistake(key, f"\"{given}\" is not {what} {ops.op.type} knows{mean} ({ops.op.type} takes "
                       f"{_either(list(choices), quote=True)})", rule="enum-value")


def _dtype_text(t: TensorType) -> str:
    from .compat import describe
    return describe(t)


def _same_family(dtype: str, allowed: list) -> bool:
    """A literal of a print has the default dtype of its kind, not necessarily its own: an int
    literal stands for any integer dtype, a float literal for any float dtype."""
    family = _FAMILY.get(dtypes.by_name(dtype).kind)
    return family is not None and any(_FAMILY.get(dtypes.by_name(d).kind) == family
                                      for d in allowed if d in dtypes.BY_NAME)


_FAMILY = {"int": "integer", "uint": "integer", "float": "float"}


def _either(items: list, quote: bool = False) -> str:
    items = [f'"{i}"' if quote else i for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " or " + items[-1]
