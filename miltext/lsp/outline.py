"""The outline of a program, in text order: functions, their blocks, the ops of each block, and
the blocks an op owns under that op. Each item spans its text (ranges nest); its selection is
the name it starts with."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ir import Program
from ..text.lexemes import quote, var
from .document_text import Source, from_loc

_LABEL = re.compile(r'[A-Za-z_][A-Za-z0-9_.]*|"(?:[^"\\\n]|\\.)*"')


@dataclass
class Symbol:
    name: str
    detail: str
    kind: str        # "function", "block" or "op"
    range: tuple     # (start, end)
    selection: tuple
    children: list["Symbol"] = field(default_factory=list)


def outline(program: Program, source: Source, bare: bool = False) -> list[Symbol]:
    """`bare`: the text is model.mil, whose var names have no %, and whose functions show their
    one block flattened into the function (the block starts where the function does)."""
    functions = sorted(((n, f) for n, f in program.functions.items() if f.loc), key=lambda nf: nf[1].loc)
    out = []
    for name, fn in functions:
        start = from_loc(fn.loc)
        symbol = Symbol(name, fn.opset, "function", (start, source.braced_end(start, outputs=bare)[1]),
                        source.token_range(start))
        for key, block in sorted(((k, b) for k, b in fn.blocks.items() if b.loc), key=lambda kb: kb[1].loc):
            child = _block(block, key, source, bare)
            symbol.children += child.children if block.loc == fn.loc else [child]
        out.append(symbol)
    return out


def _block(block, key, source: Source, bare: bool) -> Symbol:
    start = from_loc(block.loc)
    close, end = source.braced_end(start, outputs=True)
    label = _LABEL.match(source.line(start[0]), start[1])
    symbol = Symbol(label.group() if label else "block", key or "", "block", (start, end),
                    source.token_range(start))
    ops = [op for op in block.operations if op.loc]
    for op, after in zip(ops, ops[1:] + [None]):
        op_start = from_loc(op.loc)
        op_end = source.trimmed(_line_start(from_loc(after.loc), op_start) if after is not None else close)
        name = ", ".join(v.name if bare else var(v.name) for v in op.outputs) or op.type
        detail = op.type + (f" {quote(op.name)}" if op.name is not None else "")
        child = Symbol(name, detail, "op", (op_start, op_end), source.token_range(op_start))
        child.children = [_block(b, None, source, bare) for b in op.blocks if b.loc]
        symbol.children.append(child)
    return symbol


def _line_start(pos: tuple, after: tuple) -> tuple:
    """The start of the line of `pos` (model.mil writes an op's type before its place), or
    `pos` itself when that line is the one of `after`."""
    return (pos[0], 0) if pos[0] > after[0] else pos
