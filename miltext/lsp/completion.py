"""What may be written at the cursor, from what the line holds before it: an op type after an
op's `=`, an input name inside its parentheses, a name in scope where a value goes, a dtype in
a type."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..dtypes import NAMES as DTYPES
from ..text import lexicon
from . import ophelp

# An op line up to its `=` and the op type being written (no parenthesis yet).
_AT_OP_TYPE = {
    False: re.compile(r'\s*%[^=(]*=\s*[A-Za-z_][\w.]*\Z|\s*%[^=(]*=\s*\Z'),
    True: re.compile(r'\s*[a-z][^=(]*>\s*[A-Za-z_]\w*(?:\s*,[^=(]*)?\s*=\s*[\w.]*\Z'),
}
_VAR_PREFIX = re.compile(f'%{lexicon.VAR_CHAR}*\\Z')
_TYPE_ITEM = {False: re.compile(r':\s*\([^()=]*\Z'), True: re.compile(r'(?:tensor|list|state)<[\w]*\Z')}


# At most this many names are offered at once (a 10k-op text has 10k names in scope); typing
# more of the name asks again.
MOST_NAMES = 100


@dataclass
class Item:
    label: str
    kind: str          # "op", "input", "var", "dtype"
    detail: str = ""
    insert: str | None = None
    replace_from: int | None = None   # the column from which the item replaces what is written


def complete(analysis, pos: tuple) -> list[Item]:
    line = analysis.source.line(pos[0])
    before = line[:pos[1]]
    bare = analysis.modelmil
    opset = ophelp.opset_at(analysis.program, pos[0])
    if _AT_OP_TYPE[bare].match(before):
        return [Item(name, "op", opset) for name in ophelp.op_names(opset)]
    call = _open_call(before)
    typed = _VAR_PREFIX.search(before)
    if not bare and typed:
        return _names(analysis, pos, bare, typed.start())
    if _TYPE_ITEM[bare].search(before):
        return [Item(d, "dtype") for d in DTYPES if d != "unused"]
    if call is not None:
        op_type, args = call
        if _at_key(args, bare):
            given = set(re.findall(r'([A-Za-z_]\w*)\s*=', args))
            sep = " = " if bare else "="
            return [Item(spec["name"], "input", "required" if not spec["optional"] else "optional",
                         spec["name"] + sep)
                    for spec in ophelp.inputs(op_type, opset) if spec["name"] not in given]
        if bare:
            return _names(analysis, pos, bare)
    return []


def _names(analysis, pos: tuple, bare: bool, replace_from: int | None = None) -> list[Item]:
    """The names in scope at `pos` that start with what is typed, those declared nearest above
    the cursor first, at most MOST_NAMES of them (the list is marked incomplete past that)."""
    from .types import declaration
    written = analysis.source.line(pos[0])[replace_from if replace_from is not None else 0:pos[1]]
    typed = re.search(r'[A-Za-z0-9_.]*\Z', written.lstrip('%"')).group()
    items = []
    for d in analysis.index.nearest_visible(pos, typed, MOST_NAMES):
        t = d.var.type
        written = d.name if bare else declaration(d.name, None, False, None)
        items.append(Item(written, "var", declaration(d.name, t, bare, analysis.program) if t is not None else d.what,
                          written, replace_from))
    return items


def _open_call(before: str) -> tuple | None:
    """(op type, its arguments so far) when the text before the cursor is inside an op's
    parentheses (not inside a nested bracket)."""
    found = None
    for m in ophelp.OP_TYPE.finditer(before):
        found = m
    if found is None:
        return None
    args = before[found.end():]
    depth = 0
    for c in re.sub(r'"(?:[^"\\]|\\.)*"', '""', args):
        depth += (c in "([") - (c in ")]")
        if depth < 0:
            return None
    return (found.group(1), args) if depth == 0 else None


def _at_key(args: str, bare: bool) -> bool:
    """Whether the cursor is where an input's name goes: after `(` or `,`, with a word begun."""
    return bool(re.search(r'(?:\A|,)\s*[A-Za-z_]?\w*\Z', args))
