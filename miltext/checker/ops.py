"""Ops, against the op table (miltext/data/ops.json, from coremltools' op registry): the op
exists in the opset in force, takes the inputs it is given, is given the inputs it needs (the
dtypes, constness and values of those inputs are the inference family's, which knows the types
of inputs the text leaves untyped). A misspelt op, input or opset gets the nearest known one."""
from __future__ import annotations

from .. import ops as op_table
from .context import Context
from .suggest import closest, did_you_mean

RULES = {
    "unknown-opset": "warning",     # a function or block opset the table does not know
    "opset-name": "error",          # an opset written as its iOS name or miscased (iOS17: CoreML7)
    "unknown-op": "error",          # an op type the table does not know: Core ML cannot load it
    "custom-op": "warning",         # an unknown op the text declares custom ([custom=True])
    "pymil-only-op": "warning",     # an op only coremltools' Python side has
    "op-not-in-opset": "error",     # an op the opset in force lacks
    "missing-input": "error",       # a required input (or parameter) not given
    "unknown-input": "error",       # an input the op does not have
    "attribute-params": "warning",  # an iOS16 constexpr parameter given as an input, not an attribute
}

CUSTOM = "custom"   # the attribute that declares an op custom: `my_op(x=%x)[custom=True]`


def check(ctx: Context) -> None:
    table = op_table.table()
    known_opsets = table["opsets"]
    for name, fn in ctx.program.functions.items():
        for key in dict.fromkeys([fn.opset, *fn.blocks]):
            if key not in known_opsets:
                _unknown_opset(ctx, fn, name, key, known_opsets)
    for _, key, op in ctx.ops:
        variants = table["ops"].get(op.type)
        if variants is None:
            _unknown_op(ctx, op, table["ops"])
            continue
        if variants[0].get("pymil_only"):
            ctx.warning("pymil-only-op", ctx.where.op_type(op.loc, op.type),
                        f"{op.type} exists only inside coremltools; the MIL proto has "
                        f"{' and '.join(variants[0].get('lowered_to') or ())} instead")
        if key not in known_opsets:
            continue
        variant = op_table.variant(op.type, key)
        if variant is None:
            ctx.faulty_ops.add(id(op))
            ctx.error("op-not-in-opset", ctx.where.op_type(op.loc, op.type),
                      _not_in_opset(op.type, key, variants, known_opsets))
            continue
        _inputs(ctx, op, key, variant, variants)


def _unknown_op(ctx: Context, op, known: dict) -> None:
    where = ctx.where.op_type(op.loc, op.type)
    declared = op.attributes.get(CUSTOM)
    if declared is not None and _true(declared):
        ctx.warning("custom-op", where, f"{op.type} is a custom op: Core ML runs it only with an "
                    "implementation of its own, and its inputs are not checked")
        return
    ctx.error("unknown-op", where, f"unknown op {op.type!r}{did_you_mean(op.type, known)} (Core ML "
              f"cannot load it; declare a custom op with [{CUSTOM}=True] "
              "after the call)")


def _true(value) -> bool:
    try:
        return bool(value.array.reshape(-1)[0])
    except (TypeError, ValueError, IndexError, AttributeError):
        return False


def _not_in_opset(op_type: str, key: str, variants: list, known: dict) -> str:
    opsets = sorted({o for v in variants for o in v["opsets"]}, key=_opset_number)
    if _opset_number(opsets[0]) > _opset_number(key):
        return f"{op_type} needs {opsets[0]} ({known.get(opsets[0], '?')}) or newer; this function's " \
               f"opset is {key}"
    return f"{op_type} is not in opset {key} (only in {_span(opsets)})"


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
    meant = set()       # the inputs misspelt ones stand for: one typo is one error, not two
    for key in given:
        if key not in params:
            ctx.faulty_ops.add(id(op))
            ctx.error("unknown-input", ctx.where.key(op.loc, key),
                      _unknown_input(op.type, what, key, opset, variants, params))
            meant.add(closest(key, params))
    for name, p in params.items():
        if not p["optional"] and name not in given and name not in meant:
            ctx.faulty_ops.add(id(op))
            ctx.error("missing-input", ctx.where.op_type(op.loc, op.type),
                      f"{op.type} needs {what} {name!r}")


def _unknown_input(op_type: str, what: str, key: str, opset: str, variants: list, params) -> str:
    elsewhere = [v for v in variants if any(p["name"] == key for p in v["inputs"])]
    if elsewhere:
        opsets = [o for v in elsewhere for o in v["opsets"]]
        return f"{op_type} has no {what} {key!r} in opset {opset} (only in {_span(opsets)})"
    return f"{op_type} has no {what} {key!r}{did_you_mean(key, params)}"


def _unknown_opset(ctx: Context, fn, function: str, key: str, known: dict) -> None:
    names = sorted(known, key=_opset_number)
    if key == "":
        ctx.warning("unknown-opset", fn.loc, f"function {function} has no opset; Core ML needs one, "
                    f"such as {names[-1]}")
        return
    by_ios = {ios.lower(): opset for opset, ios in known.items()}
    meant = by_ios.get(key.lower()) or next((o for o in names if o.lower() == key.lower()), None)
    if meant is not None:
        ctx.error("opset-name", fn.loc, f"unknown opset {key!r} in function {function}; did you mean "
                  f"{meant}? (MIL names the {known[meant]} opset {meant})")
        return
    ctx.warning("unknown-opset", fn.loc, f"unknown opset {key!r} in function {function} (known: "
                f"{names[0]} to {names[-1]}){did_you_mean(key, names)}; its ops are not checked "
                "against the op table")


def _opset_number(opset: str) -> int:
    digits = "".join(c for c in opset if c.isdigit())
    return int(digits) if digits else -1


def _span(opsets: list) -> str:
    ordered = sorted(set(opsets), key=_opset_number)
    return ordered[0] if len(ordered) == 1 else f"{ordered[0]} to {ordered[-1]}"
