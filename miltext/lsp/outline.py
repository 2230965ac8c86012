"""The outline of a program, in text order: functions, their blocks, the ops of each block, and
the blocks an op owns under that op. Each item spans its text (ranges nest); its selection is
the name it starts with."""
from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _string  # a str as JSON, in C

from ..ir import Program
from ..ir.compact import CompactOperation
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
    child = Symbol(_name(op, bare), op.type + _aside(op), "op", (op_start, op_end), source.token_range(op_start))
    child.children = [_block(b, None, source, bare) for b in op.blocks if b.loc]
    return child


def _name(op, bare: bool) -> str:
    """The name of an op's symbol: its outputs (its type when it has none)."""
    outputs = op.outputs
    if len(outputs) == 1:
        return outputs[0].name if bare else var(outputs[0].name)
    return ", ".join(v.name if bare else var(v.name) for v in outputs) or op.type


def _aside(op) -> str:
    """What an op's detail says after its type: its name, unless that is its output's (a
    canonical text names each op after its output)."""
    given = op.name
    if given is None:
        return ""
    outputs = op.outputs
    return "" if len(outputs) == 1 and outputs[0].name == given else " " + quote(given)


# ---- the outline as LSP's JSON, fast after an edit ----

KINDS = {"function": 12, "block": 3, "op": 25}   # LSP's SymbolKind: Function, Namespace, Operator
# An op without blocks; LSP's DocumentSymbol.children is optional, and left out (a 10k-op outline
# is some 2 MB of JSON: the client reads all of it after each edit).
MOST_ENDS = 1 << 16   # the most values of the ends an outline shares on to the next
_OP_JSON = ('{"name":%s,"kind":25,"range":{"start":{"line":%d,"character":%d},"end":{"line":%d,"character":%d}},'
            '"selectionRange":{"start":{"line":%d,"character":%d},"end":{"line":%d,"character":%d}},"detail":%s}')
_WIDE = re.compile(r"[^\x00-\x7f]")


class Columns:
    """Columns as the client counts them (`units`, a pygls unit counter: UTF-16 unless it asked
    otherwise) where a line holds a character outside ASCII; the same number elsewhere."""

    def __init__(self, source: Source, units):
        self.source, self.units = source, units
        starts = source.lines.starts
        self.wide = set() if source.ascii else {bisect_right(starts, m.start()) - 1 for m in _WIDE.finditer(source.text)}

    def __call__(self, line: int, column: int) -> int:
        if line not in self.wide:
            return column
        return self.units.num_units(self.source.line(line)[:column])


class Outlines:
    """The outline as LSP's JSON, written straight from the program. What is slow to find for an
    op's symbol (where its range ends: the text up to the next op; where its selection ends) is
    kept in its piece (relative to the piece's first line, with the lines to the next op, which
    it depends on), so an op the edit did not touch is not looked at again, even when lines moved
    above it. While the outline is being asked for (after each edit, as an editor does), each
    op's JSON is kept too, with the line it was written for: an op the edit did not move is not
    written again. That is twice the text for a 10k-op outline, so `forget` drops it once the
    asking stops.

    A piece's `outline` is the op's ends (an int, see `_ends`: one object for the ops that end
    alike), or (ends, line, JSON) while the JSON is kept. What stays (the ends) is all made before any JSON is written, and
    forgetting makes nothing new: a small object that stays, made among the JSON strings, keeps
    their pages in use once they are dropped (at 10k ops, 12.5x the text instead of 10x)."""

    def __init__(self, reading, previous: "Outlines | None" = None):
        self.pieces = reading.pieces
        self.keep = True   # whether each op's JSON is kept too (see forget)
        # one int for each value of the ends: most ops end alike (at 10k ops, some 200 values),
        # and an int for each op is 0.5 MB; kept from the outline before, while it stays small
        self.ends: dict = previous.ends if previous is not None and len(previous.ends) < MOST_ENDS else {}
        if reading.changed is not None:   # an edit between ops (a comment) moves the end of the one before
            i = bisect_right(reading.pieces, reading.changed[0], key=lambda p: p.start) - 1
            if i >= 0:
                reading.pieces[i].outline = None

    def json(self, program, source: Source, bare: bool, units=None) -> str:
        """The outline as LSP's DocumentSymbol[] JSON, its columns in `units` (a pygls unit
        counter; None: code points). The text's lines must be LSP's (no lone \\r)."""
        columns = Columns(source, units) if units is not None and not source.ascii else None
        functions = sorted(((n, f) for n, f in program.functions.items() if f.loc), key=lambda nf: nf[1].loc)
        parts = []
        self._at = 0   # the piece the next op is in, or before it (ops come in text order)
        for name, fn in functions:
            start = from_loc(fn.loc)
            head = Symbol(name, fn.opset, "function", (start, source.braced_end(start, outputs=bare)[1]),
                          source.token_range(start))
            children = []
            for key, block in sorted(((k, b) for k, b in fn.blocks.items() if b.loc), key=lambda kb: kb[1].loc):
                inner = self._block(block, key, source, bare, columns)
                children += inner[1] if block.loc == fn.loc else [_json(inner[0], inner[1], columns)]
            parts.append(_json(head, children, columns))
        return "[" + ",".join(parts) + "]"

    def forget(self) -> None:
        """Drop the ops' JSON, keeping what is slow to find (the typing has stopped)."""
        self.keep = False
        for piece in self.pieces:
            if piece.outline is not None and len(piece.outline) == 3:
                piece.outline = piece.outline[0]

    def _piece_of(self, op):
        pieces, k = self.pieces, self._at
        if k < len(pieces) and pieces[k]._ops is op:   # most: the piece of one op, the next one
            self._at = k + 1
            return pieces[k]
        while k < len(pieces) and not (pieces[k]._ops is op or type(pieces[k]._ops) is tuple and op in pieces[k]._ops):
            k += 1
        if k == len(pieces):
            return None
        self._at = k
        return pieces[k]

    def _block(self, block, key, source: Source, bare: bool, columns) -> tuple:
        """(the block's symbol, the JSON of its ops)."""
        start = from_loc(block.loc)
        close, end = source.braced_end(start, outputs=True)
        label = _LABEL.match(source.line(start[0]), start[1])
        symbol = Symbol(label.group() if label else "block", key or "", "block", (start, end), source.token_range(start))
        ops = [op for op in block.operations if op.loc]
        out = []
        todo = ([], [], [], [])   # the ops to write (their place in out, op, piece, ends), once all ends are made
        for op, after in zip(ops, ops[1:] + [None]):
            line = op.loc[0] - 1
            until = _until(op, after, close)
            piece = self._piece_of(op)
            if piece is not None and piece.start != line:   # not the first op of its piece: not kept
                piece = None
            found = piece.outline if piece is not None else None
            if type(found) is tuple:
                if found[1] == line and found[0] >> _UNTIL == until and columns is None:
                    out.append(found[2])   # written for this place already: while typing, most ops
                    continue
                found = found[0]
            if type(op) is not CompactOperation and op.blocks:   # a few: written out in full
                out.append(json.dumps(_tree_json(_op(op, after, close, source, bare), columns), separators=(",", ":")))
                continue
            if found is None or found >> _UNTIL != until:
                found = _ends(op, after, close, until, source)
                found = self.ends.setdefault(found, found)
                if piece is not None:
                    piece.outline = found
            for column, item in zip(todo, (len(out), op, piece, found)):
                column.append(item)
            out.append(None)
        for at, op, piece, found in zip(*todo):
            line, column = op.loc[0] - 1, op.loc[1] - 1
            last, end_column, selected = line + (found >> 2 * _BITS & _MASK), found >> _BITS & _MASK, found & _MASK
            if columns is not None:
                column, end_column, selected = columns(line, column), columns(last, end_column), columns(line, selected)
            out[at] = written = _OP_JSON % (_string(_name(op, bare)), line, column, last, end_column, line, column,
                                            line, selected, _string(op.type + _aside(op)))
            if piece is not None and self.keep and columns is None:
                piece.outline = (found, line, written)
        return symbol, out


def _until(op, after, close: tuple) -> int:
    """The lines from an op to the next op of its block (or past the block's end)."""
    return (after.loc[0] - 1 if after is not None else close[0] + 1) - (op.loc[0] - 1)


# An op's ends are one int (one small object per op, not a tuple and its items): from the top,
# the lines to the next op, its range's end as lines from its start and a column, and its
# selection's end column, all but the first in _BITS bits (the server reads at most 32M characters).
_BITS = 26
_MASK = (1 << _BITS) - 1
_UNTIL = 3 * _BITS


def _ends(op, after, close: tuple, until: int, source: Source) -> int:
    """What _op finds that is slow to find, without the rest of its symbol, as one int (above)."""
    start = (op.loc[0] - 1, op.loc[1] - 1)
    end_line, end_column = source.trimmed(_line_start(from_loc(after.loc), start) if after is not None else close)
    selected = source.token_range(start)[1][1]
    return until << _UNTIL | min(end_line - start[0], _MASK) << 2 * _BITS | min(end_column, _MASK) << _BITS | min(selected, _MASK)


def _tree_json(symbol: Symbol, columns=None) -> dict:
    out = {"name": symbol.name, "kind": KINDS[symbol.kind],
           "range": {"start": _place(symbol.range[0], columns), "end": _place(symbol.range[1], columns)},
           "selectionRange": {"start": _place(symbol.selection[0], columns),
                              "end": _place(symbol.selection[1], columns)}}
    if symbol.detail:
        out["detail"] = symbol.detail
    if symbol.children or symbol.kind != "op":
        out["children"] = [_tree_json(c, columns) for c in symbol.children]
    return out


def _place(pos: tuple, columns) -> dict:
    return {"line": pos[0], "character": pos[1] if columns is None else columns(*pos)}


def _json(symbol: Symbol, children: list, columns) -> str:
    """The JSON of a function's or block's symbol, with its children's JSON."""
    text = json.dumps(_tree_json(Symbol(symbol.name, symbol.detail, symbol.kind, symbol.range, symbol.selection),
                                 columns), separators=(",", ":"))
    return text[:-len("]}")] + ",".join(children) + "]}"   # the children go into its "children":[]


def _line_start(pos: tuple, after: tuple) -> tuple:
    """The start of the line of `pos` (model.mil writes an op's type before its place), or
    `pos` itself when that line is the one of `after`."""
    return (pos[0], 0) if pos[0] > after[0] else pos
