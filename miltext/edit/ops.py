"""--replace-op VAR=OPTYPE: the op that makes VAR becomes another type of op, keeping the inputs
the new one takes (as miltext/data/ops.json lists them for the function's opset); its output
types are inferred anew."""
from __future__ import annotations

from .. import ops as op_table
from ..checker.suggest import did_you_mean
from ..text.lexemes import var as spelt
from .scope import EditError, definitions, missing

WITH_BLOCKS = ("cond", "while_loop")


def replace_op(fn_name: str, fn, name: str, op_type: str):
    """Make the change; the op, for its outputs' types to be inferred."""
    defs = definitions(fn).get(name)
    if not defs:
        raise missing(name, {fn_name: definitions(fn)})
    op = defs[0].op
    if op is None:
        raise EditError(f"{spelt(name)} is an input, made by no op")
    known = op_table.table()["ops"]
    if op_type not in known:
        raise EditError(f"no op {op_type!r} in the op table{did_you_mean(op_type, known)}")
    if op.blocks or op_type in WITH_BLOCKS:
        raise EditError(f"{op.type} to {op_type}: an op with blocks of its own is not swapped for another")
    params = op_table.params(op_type, fn.opset)
    if not params and op_table.variant(op_type, fn.opset) is None:
        raise EditError(f"{op_type} is not in opset {fn.opset} of function {fn_name}")
    kept = {key: bindings for key, bindings in op.inputs.items() if key in params}
    lacking = [p for p, spec in params.items() if not spec["optional"] and p not in kept]
    if lacking:
        raise EditError(f"{op_type} needs {_and(lacking)}, which {op.type} {spelt(name)} does not give")
    op.type = op_type
    op.inputs = kept      # assigned whole: a compact op's dicts are read-only
    for v in op.outputs:
        v.type = None     # inferred for the new op
    return op


def _and(names: list) -> str:
    named = [f"input {n!r}" for n in names]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
