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


# ---- the outline as LSP's JSON, fast after an edit ----

KINDS = {"function": 12, "block": 3, "op": 25}   # LSP's SymbolKind: Function, Namespace, Operator
_OP_JSON = ('{"name":%s,"kind":25,"range":{"start":{"line":%d,"character":%d},"end":{"line":%d,"character":%d}},'
            '"selectionRange":{"start":{"line":%d,"character":%d},"end":{"line":%d,"character":%d}},'
            '%s"children":[%s]}')


class Outlines:
    """The outline as LSP's JSON, written straight from the program. What is slow to find for an
    op's symbol (where its range ends: the text up to the next op; where its selection ends) is
    kept in its piece (relative to the piece's first line, with the lines to the next op, which
    it depends on), so an op the edit did not touch is not looked at again, even when lines moved
    above it. Nothing else is kept: the JSON of a 10k-op outline is twice the text."""

    def __init__(self, reading):
        self.pieces = reading.pieces
        if reading.changed is not None:   # an edit between ops (a comment) moves the end of the one before
            i = bisect_right(reading.pieces, reading.changed[0], key=lambda p: p.start) - 1
            if i >= 0:
                reading.pieces[i].outline = None

    def json(self, program, source: Source, bare: bool) -> str:
        """The outline as LSP's DocumentSymbol[] JSON (places in code points: for a plain text)."""
        functions = sorted(((n, f) for n, f in program.functions.items() if f.loc), key=lambda nf: nf[1].loc)
        parts = []
        self._at = 0   # the piece the next op is in, or before it (ops come in text order)
        for name, fn in functions:
            start = from_loc(fn.loc)
            head = Symbol(name, fn.opset, "function", (start, source.braced_end(start, outputs=bare)[1]),
                          source.token_range(start))
            children = []
            for key, block in sorted(((k, b) for k, b in fn.blocks.items() if b.loc), key=lambda kb: kb[1].loc):
                inner = self._block(block, key, source, bare)
                children += inner[1] if block.loc == fn.loc else [_json(inner[0], inner[1])]
            parts.append(_json(head, children))
        return "[" + ",".join(parts) + "]"

    def _piece_of(self, op):
        pieces, k = self.pieces, self._at
        while k < len(pieces) and not (pieces[k]._ops is op or type(pieces[k]._ops) is tuple and op in pieces[k]._ops):
            k += 1
        if k == len(pieces):
            return None
        self._at = k
        return pieces[k]

    def _block(self, block, key, source: Source, bare: bool) -> tuple:
        """(the block's symbol, the JSON of its ops)."""
        start = from_loc(block.loc)
        close, end = source.braced_end(start, outputs=True)
        label = _LABEL.match(source.line(start[0]), start[1])
        symbol = Symbol(label.group() if label else "block", key or "", "block", (start, end), source.token_range(start))
        ops = [op for op in block.operations if op.loc]
        out = []
        dumps = json.dumps
        for op, after in zip(ops, ops[1:] + [None]):
            line, column = op.loc[0] - 1, op.loc[1] - 1
            until = (after.loc[0] - 1 if after is not None else close[0] + 1) - line
            piece = self._piece_of(op)
            found = piece.outline if piece is not None else None
            if found is None or found[0] != until or op.blocks:
                full = _op(op, after, close, source, bare)
                if op.blocks:   # a few: written out in full
                    out.append(dumps(_tree_json(full), separators=(",", ":")))
                    continue
                (_, _), (end_line, end_column) = full.range
                found = (until, end_line - line, end_column, full.selection[1][1])
                if piece is not None and piece.start == line:
                    piece.outline = found
            name = ", ".join(v.name if bare else var(v.name) for v in op.outputs) or op.type
            detail = op.type + (f" {quote(op.name)}" if op.name is not None else "")
            out.append(_OP_JSON % (dumps(name), line, column, line + found[1], found[2], line, column, line, found[3],
                                   f'"detail":{dumps(detail)},', ""))
        return symbol, out


def _tree_json(symbol: Symbol) -> dict:
    out = {"name": symbol.name, "kind": KINDS[symbol.kind],
           "range": {"start": _place(symbol.range[0]), "end": _place(symbol.range[1])},
           "selectionRange": {"start": _place(symbol.selection[0]), "end": _place(symbol.selection[1])}}
    if symbol.detail:
        out["detail"] = symbol.detail
    out["children"] = [_tree_json(c) for c in symbol.children]
    return out


def _place(pos: tuple) -> dict:
    return {"line": pos[0], "character": pos[1]}


def _json(symbol: Symbol, children: list) -> str:
    """The JSON of a function's or block's symbol, with its children's JSON."""
    text = json.dumps(_tree_json(Symbol(symbol.name, symbol.detail, symbol.kind, symbol.range, symbol.selection)),
                      separators=(",", ":"))
    return text[:-len("]}")] + ",".join(children) + "]}"   # the children go into its "children":[]


def _line_start(pos: tuple, after: tuple) -> tuple:
    """The start of the line of `pos` (model.mil writes an op's type before its place), or
    `pos` itself when that line is the one of `after`."""
    return (pos[0], 0) if pos[0] > after[0] else pos
