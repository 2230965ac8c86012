"""Ops, against the op table (miltext/data/ops.json, from coremltools' op registry): the op
exists in the opset in force, takes the inputs it is given, is given the inputs it needs, of
the dtypes the table allows. The table's dtypes are checked one input at a time (not that x and
y share one type), which keeps the check free of false alarms."""
from __future__ import annotations

from .. import dtypes
from .. import ops as op_table
from ..ir import TensorType
from .compat import describe
from .context import Context

RULES = {
    "unknown-opset": "warning",     # a function or block opset the table does not know
    "unknown-op": "warning",        # an op type the table does not know (a custom op)
    "pymil-only-op": "warning",     # an op only coremltools' Python side has
    "op-not-in-opset": "error",     # an op the opset in force lacks
    "missing-input": "error",       # a required input (or parameter) not given
    "unknown-input": "error",       # an input the op does not have
    "attribute-params": "warning",  # an iOS16 constexpr parameter given as an input, not an attribute
    "input-dtype": "error",         # an input of a dtype the op does not take
}


def check(ctx: Context) -> None:
    table = op_table.table()
    known_opsets = table["opsets"]
    for name, fn in ctx.program.functions.items():
        for key in dict.fromkeys([fn.opset, *fn.blocks]):
            if key not in known_opsets:
                ctx.warning("unknown-opset", fn.loc, _unknown_opset(name, key, known_opsets))
    for _, key, op in ctx.ops:
        variants = table["ops"].get(op.type)
        if variants is None:
            ctx.warning("unknown-op", ctx.where.op_type(op.loc, op.type), f"unknown op {op.type!r}: "
                        "coremltools' op set has no such op, so its inputs are not checked")
            continue
        if variants[0].get("pymil_only"):
            ctx.warning("pymil-only-op", ctx.where.op_type(op.loc, op.type),
                        f"{op.type} exists only inside coremltools; the MIL proto has "
                        f"{' and '.join(variants[0].get('lowered_to') or ())} instead")
        if key not in known_opsets:
            continue
        variant = op_table.variant(op.type, key)
        if variant is None:
            since = min((o for v in variants for o in v["opsets"]), key=_opset_number)
            later = f"; it came in {since}" if _opset_number(since) > _opset_number(key) else ""
            ctx.error("op-not-in-opset", ctx.where.op_type(op.loc, op.type),
                      f"{op.type} is not in opset {key}{later}")
            continue
        _inputs(ctx, op, key, variant, variants)


def _inputs(ctx: Context, op, opset: str, variant: dict, variants: list) -> None:
    params = {p["name"]: p for p in variant["inputs"]}
    given = dict.fromkeys(op.inputs)
    if variant["attribute_params"]:
        given.update(dict.fromkeys(k for k in op.attributes if k != "name"))
        as_inputs = [k for k in op.inputs if k in params and k not in op.attributes]
        if as_inputs:
            them = "them" if len(as_inputs) > 1 else "it"
            ctx.warning("attribute-params", ctx.where.key(op.loc, as_inputs[0]),
                        f"{op.type} takes {', '.join(as_inputs)} as "
                        f"{'attributes' if len(as_inputs) > 1 else 'an attribute'} in the proto: "
                        f"write {them} in [...] after the call")
    what = "attribute" if variant["attribute_params"] else "input"
    for key in given:
        if key not in params:
            ctx.error("unknown-input", ctx.where.key(op.loc, key),
                      _unknown_input(op.type, what, key, opset, variants))
    for name, p in params.items():
        if not p["optional"] and name not in given:
            ctx.error("missing-input", ctx.where.op_type(op.loc, op.type),
                      f"{op.type} needs {what} {name!r}")
    for name, p in params.items():
        allowed = p["dtypes"]
        if allowed and p["kind"] == "tensor" and name in given:
            _dtypes(ctx, op, name, allowed)


def _dtypes(ctx: Context, op, key: str, allowed: list) -> None:
    if key in op.inputs:
        bound = [(b, ctx.binding_type(op, key, i)) for i, b in enumerate(op.inputs[key])]
    else:  # an attribute-style parameter
        bound = [(op.attributes[key], op.attributes[key].type)]
    for b, t in bound:
        if isinstance(t, TensorType) and t.dtype not in allowed and not (
                ctx.from_print and not isinstance(b, str) and _guessed_dtype_fits(t.dtype, allowed)):
            loc = ctx.where.reference(op.loc, b, key) if isinstance(b, str) else ctx.where.key(op.loc, key)
            ctx.error("input-dtype", loc, f"input {key!r} of {op.type} is {describe(t)}; "
                      f"{op.type} takes {_either(allowed)} there")


def _guessed_dtype_fits(dtype: str, allowed: list) -> bool:
    """A literal of a print has the default dtype of its kind, not necessarily its own: an int
    literal stands for any integer dtype, a float literal for any float dtype."""
    family = _FAMILY.get(dtypes.by_name(dtype).kind)
    return family is not None and any(_FAMILY.get(dtypes.by_name(d).kind) == family
                                      for d in allowed if d in dtypes.BY_NAME)


_FAMILY = {"int": "integer", "uint": "integer", "float": "float"}


def _unknown_input(op_type: str, what: str, key: str, opset: str, variants: list) -> str:
    elsewhere = [v for v in variants if any(p["name"] == key for p in v["inputs"])]
    if elsewhere:
        opsets = [o for v in elsewhere for o in v["opsets"]]
        return f"{op_type} has no {what} {key!r} in opset {opset} (only in {_span(opsets)})"
    return f"{op_type} has no {what} {key!r}"


def _unknown_opset(function: str, key: str, known: dict) -> str:
    names = sorted(known, key=_opset_number)
    if key == "":
        return f"function {function} has no opset; Core ML needs one, such as {names[-1]}"
    return f"unknown opset {key!r} in function {function} (known: {names[0]} to {names[-1]}); " \
           "its ops are not checked against the op table"


def _opset_number(opset: str) -> int:
    digits = "".join(c for c in opset if c.isdigit())
    return int(digits) if digits else -1


def _span(opsets: list) -> str:
    ordered = sorted(set(opsets), key=_opset_number)
    return ordered[0] if len(ordered) == 1 else f"{ordered[0]} to {ordered[-1]}"


def _either(dtypes: list) -> str:
    return dtypes[0] if len(dtypes) == 1 else ", ".join(dtypes[:-1]) + " or " + dtypes[-1]
