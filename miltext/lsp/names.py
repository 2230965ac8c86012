"""Which definition a %name under the cursor refers to, and what defines it.

Scoping is miltext.refs's, as `check` and `to_proto(strict=True)` see it. refs places each use
at the op that makes it (or at the block whose outputs name it); here a use belongs to the
latest such anchor before it in the text: an op's start, or the closing brace of a block.
"""
from __future__ import annotations

from bisect import bisect_left, bisect_right

from ..ir import Program, Var
from ..refs import resolve
from ..text.lexemes import quote, var_name
from .source import Source, from_loc


class Names:
    def __init__(self, program: Program, source: Source):
        self._what: dict[int, str] = {}        # id(var) -> what defines it (the program keeps the vars)
        self._declared: dict[tuple, Var] = {}  # start of a declaration -> its var
        for fn_name, fn in program.functions.items():
            for v in fn.inputs:
                self._define(v, f"input of function `{fn_name}`")
            for block in fn.blocks.values():
                self._block(block)
        anchored = []
        for ref in resolve(program).references:
            if ref.op is not None:
                anchor = from_loc(ref.op.loc) if ref.op.loc else None
            else:
                anchor = source.braced_end(from_loc(ref.block.loc), outputs=True)[0] if ref.block.loc else None
            if anchor is not None:
                anchored.append((anchor, ref.name, ref.target))
        anchored.sort(key=lambda a: a[0])
        self._anchors = [a[0] for a in anchored]
        self._uses = anchored

    def _define(self, v: Var, what: str) -> None:
        self._what[id(v)] = what
        if v.loc:
            self._declared[from_loc(v.loc)] = v

    def _block(self, block) -> None:
        where = f" at line {block.loc[0]}" if block.loc else ""
        for v in block.inputs:
            self._define(v, f"input of the block{where}")
        for op in block.operations:
            what = f"`{op.type}` op" + (f" {quote(op.name)}" if op.name is not None else "")
            if op.loc:
                what += f", line {op.loc[0]}"
            for v in op.outputs:
                self._define(v, f"output of {what}")
            for inner in op.blocks:
                self._block(inner)

    def lookup(self, token: str, start: tuple) -> tuple[bool, Var | None]:
        """(found, definition) for the name `token` (%x, or model.mil's bare x) written at
        `start`: a declaration is its own definition; a use is what refs resolved it to (None
        when nothing defines it)."""
        declared = self._declared.get(start)
        if declared is not None:
            return True, declared
        i = bisect_right(self._anchors, start)
        if i == 0:
            return False, None
        first = bisect_left(self._anchors, self._anchors[i - 1])
        name = var_name(token) if token.startswith("%") else token
        for _, used, target in self._uses[first:i]:  # the uses at the nearest anchor before
            if used == name:
                return True, target
        return False, None

    def describe(self, v: Var) -> str:
        return self._what.get(id(v), "defined here")
