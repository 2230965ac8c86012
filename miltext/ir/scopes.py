"""MIL's scoping rules, in one place: which definition each use of a name refers to.

A block sees its function's inputs, the names its enclosing blocks defined before the op that
owns it, its own inputs, and its own earlier op outputs. A block's inputs (a while_loop's loop
variables) and everything its ops define are local to it. A name defined again in the same
scope replaces the earlier definition from there on.

`resolve` walks a program once and records every use and every redefinition; `check` builds
its diagnostics on that, and `to_proto(strict=True)` refuses programs with undefined names.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # names for annotations only: the object model's encoder imports this module
    from .program import Block, Program, Var


class Scope:
    """The names one block defines (a function's top block shares its scope with the function's
    inputs). `names` grows as the walk goes on, so after the walk it holds the whole block."""
    __slots__ = ("block", "parent", "names")

    def __init__(self, block: Block | None, parent: "Scope | None", names: dict | None = None):
        self.block, self.parent, self.names = block, parent, names if names is not None else {}

    def lookup(self, name: str) -> Var | None:
        scope = self
        while scope is not None:
            var = scope.names.get(name)
            if var is not None:
                return var
            scope = scope.parent
        return None


class Reference:
    """One use of a name: binding `index` of input `key` of `op`, or output `index` of `block`
    (then `op` is None). `target` is the definition it refers to, None when nothing visible
    there defines it."""
    __slots__ = ("name", "scope", "op", "block", "key", "index", "target")

    def __init__(self, name, scope, op, block, key, index, target):
        self.name, self.scope, self.op, self.block = name, scope, op, block
        self.key, self.index, self.target = key, index, target

    @property
    def loc(self) -> tuple | None:
        return self.op.loc if self.op is not None else self.block.loc


class Resolution:
    """What `resolve` found: every reference in program order; every redefinition as a pair
    (new definition, the definition it replaces); and per function, all its scopes."""

    def __init__(self):
        self.references: list[Reference] = []
        self.redefinitions: list[tuple[Var, Var]] = []
        self.scopes: dict[str, list[Scope]] = {}

    def undefined(self) -> list[Reference]:
        return [r for r in self.references if r.target is None]


def resolve(program: Program) -> Resolution:
    out = Resolution()
    for fn_name, fn in program.functions.items():
        scopes = out.scopes[fn_name] = []
        inputs: dict = {}
        for var in fn.inputs:
            _define(inputs, var, out)
        for block in fn.blocks.values():
            _walk(block, Scope(block, None, dict(inputs)), out, scopes)
    return out


def _define(names: dict, var: Var, out: Resolution) -> None:
    first = names.get(var.name)
    if first is not None:
        out.redefinitions.append((var, first))
    names[var.name] = var


def _walk(block: Block, scope: Scope, out: Resolution, scopes: list) -> None:
    scopes.append(scope)
    names, refs = scope.names, out.references
    for var in block.inputs:
        _define(names, var, out)
    for op in block.operations:
        for key, bindings in op.inputs.items():
            for index, b in enumerate(bindings):
                if isinstance(b, str):
                    refs.append(Reference(b, scope, op, block, key, index, scope.lookup(b)))
        for inner in op.blocks:
            _walk(inner, Scope(inner, scope), out, scopes)
        for var in op.outputs:
            _define(names, var, out)
    for index, name in enumerate(block.outputs):
        refs.append(Reference(name, scope, None, block, None, index, scope.lookup(name)))


def undefined_references(program: Program) -> list[tuple[str, tuple | None]]:
    """(name, loc) for each use of an undefined name, in program order."""
    return [(r.name, r.loc) for r in resolve(program).undefined()]


__all__ = ["Scope", "Reference", "Resolution", "resolve", "undefined_references"]
