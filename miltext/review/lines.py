"""Canonical MIL text as a list of lines, each split into what a structural comparison needs:
the names it defines, the names it uses, its op's type and name, the blobs it refers to, and a
template of everything else.

The canonical printer puts one op per line and spells every name the same way, so the lines of
its text are the program's structure: no parse (and no object model) is needed to compare two
programs. A var token followed by `: ` declares a name (op outputs, function and block inputs,
the model section's inputs and outputs); any other var token uses one.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..ir import DEFAULT_WEIGHT_FILE, Blob, TensorType
from ..text import lexemes, lexicon
from ..text.blob_layout import Layout

# A string, a var (bare or quoted), or a blob reference, as the canonical printer writes them.
_STRING = lexicon.STRING
_TOKEN = re.compile(rf'(?=[(%n"])(?:(?P<blob>\(blob(?:\((?P<file>{_STRING})?(?:, )?(?P<offset>[0-9]+)?\))?\))' 
                    rf'|(?P<var>{lexicon.VAR})(?P<decl>: )?'
                    rf'|(?P<name>(?<=[(\s])name=)(?P<value>{_STRING})(?=[,)])'
                    rf'|{_STRING})')
_OP = re.compile(rf'= ((?:{lexicon.NAME}|{_STRING}))\(')
_BARE_OP = re.compile(rf' {{4,}}((?:{lexicon.NAME}|{_STRING}))\(')
_BLOCK = re.compile(r'block[0-9]+[(\[]')
_BLOB_TYPE = re.compile(r'\(((?:[0-9]+, )*)([a-z0-9]+)\)$')   # `(32, 8, fp16)` right before `(blob`

DEF, USE, BLOB = "\x00D", "\x00U", "\x00B"   # placeholders in a template (no text holds a NUL)


@dataclass(slots=True)
class Line:
    text: str
    template: str                       # the text with names, uses, blobs and the op's name cut out
    defs: list = field(default_factory=list)     # names declared, in order
    uses: list = field(default_factory=list)     # names used, in order
    blobs: list = field(default_factory=list)    # (file, offset) of each blob reference
    op: str | None = None               # the op type, on an op line
    name: str | None = None             # the op's name attribute


def split_lines(text: str) -> list[Line]:
    layout = Layout()   # the offsets a plain `blob` leaves to the weight file's layout
    return [_line(t, layout) for t in text.split("\n")[:-1 if text.endswith("\n") else None]]


def _line(text: str, layout: Layout) -> Line:
    if "%" not in text and "(blob" not in text and "name=" not in text:
        return Line(text, text, op=_op_type(text))
    pieces, defs, uses, blobs, at = [], [], [], [], 0
    op_name = None
    for m in _TOKEN.finditer(text):
        if m.group("blob") is not None:
            file = lexemes.unquote(m.group("file")) if m.group("file") else DEFAULT_WEIGHT_FILE
            blobs.append((file, _offset(m, file, text, layout)))
            cut = BLOB
        elif m.group("var") is not None:
            name = lexemes.var_name(m.group("var"))
            if m.group("decl"):
                defs.append(name)
                cut = DEF + ": "
            else:
                uses.append(name)
                cut = USE
        elif m.group("name") is not None:
            op_name = lexemes.unquote(m.group("value"))
            cut = "name=\x00N"
        else:
            continue   # a string: nothing to cut
        pieces.append(text[at:m.start()])
        pieces.append(cut)
        at = m.end()
    pieces.append(text[at:])
    template = "".join(pieces)
    return Line(text, template, defs, uses, blobs, _op_type(template), op_name)


def _offset(m, file: str, text: str, layout: Layout) -> int | None:
    """The blob's offset: written, or where the layout puts it (None when the blob before it in
    its file has a type of no static size); the layout moves past the blob by its type."""
    offset = int(m.group("offset")) if m.group("offset") else layout.expected(file)
    if offset is None:
        layout.advance_to(file, None)
        return None
    typed = _BLOB_TYPE.search(text, max(0, m.start() - 400), m.start())
    vtype = None if typed is None else \
        TensorType(typed.group(2), tuple(int(d) for d in typed.group(1).split(", ")[:-1]))
    layout.advance(Blob(offset, file), vtype)
    return offset


def _op_type(template: str) -> str | None:
    """The op type of an op line: after ` = `, or first on a line of an op without outputs
    (indented as ops are, and no block header)."""
    m = _OP.search(template)
    if m is None:
        m = _BARE_OP.match(template)
        if m is None or _BLOCK.match(template, m.start(1)):
            return None
    token = m.group(1)
    return lexemes.unquote(token) if token.startswith('"') else token
