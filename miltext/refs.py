"""Which names a program uses that nothing defines, under MIL's scoping rules.

A block sees its function's inputs, the names its enclosing blocks defined before the op that
owns it, its own inputs, and its own earlier op outputs. `check` builds its diagnostics on this;
`to_proto(strict=True)` refuses such programs.
"""
from __future__ import annotations

from .ir import Block, Program


def undefined_references(program: Program) -> list[tuple[str, tuple | None]]:
    """(name, loc) for each use of an undefined name, in program order."""
    found: list = []
    for fn in program.functions.values():
        scope = {v.name for v in fn.inputs}
        for blk in fn.blocks.values():
            _walk(blk, set(scope), found)
    return found


def _walk(block: Block, scope: set, found: list) -> None:
    scope.update(v.name for v in block.inputs)
    for op in block.operations:
        for bindings in op.inputs.values():
            for b in bindings:
                if isinstance(b, str) and b not in scope:
                    found.append((b, op.loc))
        for inner in op.blocks:
            _walk(inner, set(scope), found)
        scope.update(v.name for v in op.outputs)
    for name in block.outputs:
        if name not in scope:
            found.append((name, block.loc))
