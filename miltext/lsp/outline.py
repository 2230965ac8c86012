"""The outline of a program, in text order: functions, their blocks, the ops of each block, and
the blocks an op owns under that op. Each item spans its text (ranges nest); its selection is
the name it starts with."""
from __future__ import annotations

import json
import re
from bisect import bisect_right
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
        symbol.children.append(_op(op, after, close, source, bare))
    return symbol


def _op(op, after, close: tuple, source: Source, bare: bool) -> Symbol:
    """The symbol of an op (`after` is the op after it in its block, `close` the block's end)."""
    op_start = from_loc(op.loc)
    op_end = source.trimmed(_line_start(from_loc(after.loc), op_start) if after is not None else close)
    name = ", ".join(v.name if bare else var(v.name) for v in op.outputs) or op.type
    detail = op.type + (f" {quote(op.name)}" if op.name is not None else "")
    child = Symbol(name, detail, "op", (op_start, op_end), source.token_range(op_start))
    child.children = [_block(b, None, source, bare) for b in op.blocks if b.loc]
    return child


# ---- the outline as LSP's JSON, each op's kept from one edit to the next ----

KINDS = {"function": 12, "block": 3, "op": 25}   # LSP's SymbolKind: Function, Namespace, Operator
_LINE = "\x00line"   # where a line goes in an op's kept JSON


class Outlines:
    """The JSON of each top-level op's symbol, kept with its lines relative to the op's own, so
    that an op the edit did not touch is not worked out again even when lines moved above it
    (only written out again for its new lines: a few %d), and as last written out.
    Keyed by the op (kept by the reading while its lines stay the same), the number of its
    lines and the lines to the next op (its range ends where the next begins)."""

    def __init__(self, reading, previous: "Outlines | None" = None):
        self.kept: dict = {}
        if previous is None or reading.changed is None:
            return
        self.kept, previous.kept = previous.kept, {}
        if reading.added is None:   # read again as a whole: the ops it kept keep their JSON
            self.kept = reading.of_its_ops(self.kept)
        else:
            for p in reading.replaced:
                for op in p.ops:
                    self.kept.pop(id(op), None)
        if reading.changed is not None:   # an edit between ops (a comment) changes the end of the one before
            i = bisect_right(reading.pieces, reading.changed[0], key=lambda p: p.start) - 1
            if i >= 0:
                for op in reading.pieces[i].ops:
                    self.kept.pop(id(op), None)

    def json(self, program, source: Source, bare: bool) -> str:
        """The outline as LSP's DocumentSymbol[] JSON (places in code points: for a plain text)."""
        functions = sorted(((n, f) for n, f in program.functions.items() if f.loc), key=lambda nf: nf[1].loc)
        parts = []
        for name, fn in functions:
            start = from_loc(fn.loc)
            head = Symbol(name, fn.opset, "function", (start, source.braced_end(start, outputs=bare)[1]),
                          source.token_range(start))
            children = []
            for key, block in sorted(((k, b) for k, b in fn.blocks.items() if b.loc), key=lambda kb: kb[1].loc):
                inner = self._block(block, key, source, bare)
                children += inner[1] if block.loc == fn.loc else [_json(inner[0], inner[1])]
            parts.append(_json(head, children))
        return "[" + ", ".join(parts) + "]"

    def _block(self, block, key, source: Source, bare: bool) -> tuple:
        """(the block's symbol, the JSON of its ops)."""
        start = from_loc(block.loc)
        close, end = source.braced_end(start, outputs=True)
        label = _LABEL.match(source.line(start[0]), start[1])
        symbol = Symbol(label.group() if label else "block", key or "", "block", (start, end), source.token_range(start))
        ops = [op for op in block.operations if op.loc]
        out = []
        kept = self.kept
        for op, after in zip(ops, ops[1:] + [None]):
            line = op.loc[0]
            until = (after.loc[0] if after is not None else close[0] + 1) - line
            found = kept.get(id(op))
            if found is None or found[1] != until:
                found = kept[id(op)] = [op, until, *_template(_op(op, after, close, source, bare), line - 1), -1, ""]
            if found[4] != line:   # written out for where the op is now
                found[4], found[5] = line, found[2] % tuple(line - 1 + r for r in found[3])
            out.append(found[5])
        return symbol, out


def _template(symbol: Symbol, base: int) -> tuple:
    """(JSON with each line a %d, those lines relative to `base`) of a symbol and its children."""
    lines: list = []
    text = json.dumps(_tree(symbol, base, lines)).replace("%", "%%").replace(json.dumps(_LINE), "%d")
    return text, tuple(lines)


def _tree(symbol: Symbol, base: int, lines: list) -> dict:
    def place(pos):
        lines.append(pos[0] - base)
        return {"line": _LINE, "character": pos[1]}
    out = {"name": symbol.name, "kind": KINDS[symbol.kind],
           "range": {"start": place(symbol.range[0]), "end": place(symbol.range[1])},
           "selectionRange": {"start": place(symbol.selection[0]), "end": place(symbol.selection[1])}}
    if symbol.detail:
        out["detail"] = symbol.detail
    out["children"] = [_tree(c, base, lines) for c in symbol.children]
    return out


def _json(symbol: Symbol, children: list) -> str:
    """The JSON of a function's or block's symbol, with its children's JSON."""
    text, lines = _template(Symbol(symbol.name, symbol.detail, symbol.kind, symbol.range, symbol.selection), 0)
    text = text % lines
    return text[:-len("]}")] + ", ".join(children) + "]}"   # the children go into its "children": []


def _line_start(pos: tuple, after: tuple) -> tuple:
    """The start of the line of `pos` (model.mil writes an op's type before its place), or
    `pos` itself when that line is the one of `after`."""
    return (pos[0], 0) if pos[0] > after[0] else pos
