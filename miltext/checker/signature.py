"""An op's inputs against its definition in the op table, with the types inference gives them
(declared or not): each of a dtype the op takes, the inputs of one type domain of one dtype,
the inputs it needs constant known at compile time, its string inputs among the strings it knows."""
from __future__ import annotations

from functools import lru_cache

from .. import dtypes, ops as op_table
from ..ir import TensorType, Value
from . import enums
from .shapes import Mistake
from .suggest import closest


def check(ops, computed, from_print: bool) -> None:
    """Raises Mistake for the first input of `ops` its op definition refuses. `computed(name)`
    says whether a var is known only when the model runs."""
    op = ops.op
    inputs, attributes = op.inputs, op.attributes
    domains = None
    for key, tensor, allowed, domain, const, choices in _plan(op.type, ops.opset):
        bindings = inputs.get(key)
        if bindings is None:
            if key not in attributes:
                continue
            bindings = [attributes[key]]
        if tensor:
            for b in bindings:
                t = ops.scope.type(b) if isinstance(b, str) else b.type if b is not None else None
                if t.__class__ is not TensorType:
                    continue
                guessed = from_print and isinstance(b, Value)
                if allowed and t.dtype not in allowed and not (guessed and _same_family(t.dtype, allowed)):
                    raise Mistake(key, f"input {key!r} of {op.type} is {_dtype_text(t)}; {op.type} takes "
                                       f"{_either(allowed)} there", rule="input-dtype")
                if domain and not guessed:
                    if domains is None:
                        domains = {}
                    domains.setdefault(domain, []).append((key, t.dtype, isinstance(b, Value)))
        if const and key in inputs:
            for b in bindings:
                if isinstance(b, str) and computed(b):
                    raise Mistake(key, f"input {key!r} of {op.type} must be known when the model is "
                                       f"compiled (a const or a literal), but %{b} is computed at run "
                                       "time", rule="const-input")
        if choices is not None:
            _enum(ops, key, choices)
    for found in (domains or {}).values():
        first_key, first, first_literal = found[0]
        for key, dtype, literal in found[1:]:
            if dtype != first:
                hint = f"; write the literal as {first}(...)" if literal and not first_literal else \
                    f"; write the literal of {first_key} as {dtype}(...)" if first_literal and not literal else ""
                raise Mistake(first_key if first_literal and not literal else key,
                              f"{op.type} takes {first_key} and {key} of one dtype, but {first_key} is "
                              f"{first} and {key} is {dtype}{hint}", rule="operand-dtypes")


@lru_cache(maxsize=None)
def _plan(op_type: str, opset: str) -> tuple:
    """What to check of each input: (name, is a tensor, dtypes allowed, type domain, must be
    const, strings allowed)."""
    plan = []
    for p in op_table.params(op_type, opset).values():
        tensor, domain, const = p["kind"] == "tensor", p.get("domain"), p["const"]
        choices = enums.allowed(op_type, p["name"], opset)
        if (tensor and (p["dtypes"] or domain)) or const or choices is not None:
            plan.append((p["name"], tensor, p["dtypes"], domain, const, choices))
    return tuple(plan)


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
    meant = None
    if hint and (ops.op.type, key) == ("cast", "dtype"):
        x = (ops.types("x") or [None])[0]      # unknown when x's maker was at fault
        meant = [TensorType(hint, x.shape)] if isinstance(x, TensorType) and x.rank is None else None
    takes = "a MIL dtype name: fp16, fp32, int32, bool, ..." if choices is enums.DTYPE_NAMES \
        else _either(list(choices), quote=True)
    raise Mistake(key, f"\"{given}\" is not {what} {ops.op.type} knows{mean} ({ops.op.type} takes "
                       f"{takes})", rule="enum-value", meant=meant)


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
