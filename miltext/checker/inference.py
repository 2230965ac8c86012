"""Declared output types against inferred ones: an op whose native inference rule
(miltext/infer) gives another type than the text declares, its inputs typed as declared."""
from __future__ import annotations

from ..ir import Value
from .compat import compatible, describe
from .context import Context, var

RULES = {
    "inferred-type": "error",   # a declared output type that contradicts inference
}


def check(ctx: Context) -> None:
    from ..infer import inferred_types
    faulty = {d.line for d in ctx.diagnostics if d.is_error}
    for op, types in inferred_types(ctx.program):
        if op.type in _CHECKED_ELSEWHERE or (ctx.from_print and _has_literal(op)) \
                or (op.loc is not None and op.loc[0] in faulty):
            continue  # a print's literals have guessed dtypes; a faulty op is reported once
        for out, inferred in zip(op.outputs, types):
            if not compatible(out.type, inferred):
                ctx.error("inferred-type", out.loc or op.loc,
                          f"{var(out.name)} is declared {describe(out.type)}, but {op.type} "
                          f"gives {describe(inferred)}")


# const by the values family, cond and while_loop by the structure family
_CHECKED_ELSEWHERE = {"const", "cond", "while_loop"}


def _has_literal(op) -> bool:
    return any(isinstance(b, Value) for bindings in op.inputs.values() for b in bindings)
