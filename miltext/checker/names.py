"""Names and scopes: every use names a visible definition, each scope defines a name once,
and names are plain identifiers. Scoping itself is miltext.ir.scopes (one implementation for
`check` and `to_proto(strict=True)`)."""
from __future__ import annotations

import re

from .context import Context, var
from .suggest import did_you_mean

RULES = {
    "undefined-name": "error",         # an op input names nothing
    "undefined-output": "error",       # a block output names nothing
    "use-before-definition": "error",  # defined, but later in this scope or an enclosing one
    "out-of-scope": "error",           # defined only in a block that does not enclose the use
    "redefinition": "error",           # a name defined twice in one scope: Core ML cannot load it
    "unusual-name": "warning",         # outside [A-Za-z_][A-Za-z0-9_@]*
}

PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_@]*\Z")
PRINT_HINT = ("if this text comes from coremltools' print: the print leaves out every const op, "
              "and {name} may be one; `miltext print` of the .pb or .mlpackage shows them all")


def check(ctx: Context) -> None:
    _undefined(ctx)
    for new, first in ctx.resolution.redefinitions:
        ctx.error("redefinition", new.loc, f"{var(new.name)} is defined twice in the same scope; "
                  "later uses refer to this definition", [ctx.note(first.loc, "first defined here")])
    _unusual_names(ctx)


def _undefined(ctx: Context) -> None:
    undefined = ctx.resolution.undefined()
    if not undefined:
        return
    scopes_of = {id(s): scopes for scopes in ctx.resolution.scopes.values() for s in scopes}
    hint = ctx.from_print  # once, with the first undefined name
    first = {}              # name -> the place of its first definition, for names defined twice
    for _, earlier in ctx.resolution.redefinitions:
        if earlier.loc is not None and (earlier.name not in first or earlier.loc < first[earlier.name]):
            first[earlier.name] = earlier.loc
    for ref in undefined:
        loc = ctx.reference_loc(ref)
        what = var(ref.name) if ref.op is not None else f"block output {var(ref.name)}"
        later, elsewhere = _definition_out_of_reach(ref, scopes_of[id(ref.scope)])
        if later is not None:
            ctx.error("use-before-definition", loc, f"{what} is used before its definition",
                      [ctx.note(later.loc, "defined here")])
        elif elsewhere is not None:
            ctx.error("out-of-scope", loc, f"{what} is not visible here: it is defined in a block "
                      "that does not enclose this use", [ctx.note(elsewhere.loc, "defined here")])
        else:
            notes = [ctx.note(None, PRINT_HINT.format(name=var(ref.name)))] if hint else []
            hint = False
            rule = "undefined-name" if ref.op is not None else "undefined-output"
            meant = did_you_mean(ref.name, _visible(ref, first), spell=var)
            ctx.error(rule, loc, f"{what} is not defined{meant}", notes)


def _visible(ref, first: dict) -> list:
    """The names a use can see: defined in its scope or an enclosing one, before the use (for
    an op's input; a block output sees the whole block)."""
    before = ref.op.loc if ref.op is not None else None
    names, scope = [], ref.scope
    while scope is not None:
        names.extend(name for name, v in scope.names.items()
                     if before is None or v.loc is None or first.get(name, v.loc) < before)
        scope = scope.parent
    return names


def _definition_out_of_reach(ref, scopes: list):
    """(a definition later in the use's own or an enclosing scope, a definition in a scope that
    does not enclose the use); the walk is over, so each scope holds all its names."""
    scope = ref.scope
    while scope is not None:
        found = scope.names.get(ref.name)
        if found is not None:
            return found, None
        scope = scope.parent
    for scope in scopes:
        found = scope.names.get(ref.name)
        if found is not None:
            return None, found
    return None, None


def _unusual_names(ctx: Context) -> None:
    plain = PLAIN_NAME.match
    defined: list = []
    for name, fn in ctx.program.functions.items():
        if not plain(name):
            ctx.warning("unusual-name", fn.loc, f"function name {name!r} is not a plain MIL "
                        "identifier ([A-Za-z_][A-Za-z0-9_@]*)")
        defined.extend(fn.inputs)
    for _, _, block in ctx.blocks:
        defined.extend(block.inputs)
        for op in block.operations:
            defined.extend(op.outputs)
    for v in defined:
        if not plain(v.name):
            ctx.warning("unusual-name", v.loc, f"{var(v.name)} is not a plain MIL identifier "
                        "([A-Za-z_][A-Za-z0-9_@]*)")
