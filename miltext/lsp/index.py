"""Every name written in a text, where it is, and which declaration it refers to: what hover,
go to definition, references, rename, highlight and completion answer from.

The scoping is miltext.ir.scopes's (a block sees its function's inputs, its enclosing blocks' names
defined before it, its own inputs and earlier outputs; a later definition replaces an earlier
one), applied to places in the text instead of to the object model: the language server must
answer at once after an edit, and refs walks the whole program. A declaration is visible from
the end of its op to the end of its block.

What is kept between edits is small, since it lives as long as the document: which op pieces
declare each name. Where a name is written is found when asked, by searching the text for it
(a few milliseconds for a 10k-line text), and a piece's declarations and the names it reads come
from its ops.
"""
from __future__ import annotations

import heapq
import re
from array import array
from bisect import bisect_right
from dataclasses import dataclass

from ..text import lexicon
from ..text.lexemes import quote, var_name
from .document_text import BARE_NAME, RAW_VAR, VAR
from .pieces import marks_of


@dataclass(slots=True)
class Decl:
    name: str
    start: tuple        # (line, column), 0-based
    end: tuple
    var: object         # the ir.Var
    what: str           # "input of function `main`", "output of `relu` op "r", line 4", ...
    scope: tuple        # (first place, last line) where the name refers to it


@dataclass(slots=True)
class Occurrence:
    name: str
    start: tuple
    end: tuple
    declares: bool


class Index:
    """Built from the index of the text before the edit when there is one: only the ops the
    edit replaced are looked at again."""

    def __init__(self, reading, previous: "Index | None" = None):
        self.reading = reading
        self.bare = reading.modelmil
        self.syntax = syntax_of(reading)
        self._piece_starts = array("q", [p.start for p in reading.pieces])
        self._decls: dict = {}   # name -> [Decl], sorted, made when first asked
        self._occurrences: dict = {}
        # (undefined name, place) -> (names set apart, the nearest of the others visible there):
        # for did-you-mean after the next edit (checking._reworded)
        self.nearest: dict = {}
        if previous is not None and previous.bare == self.bare and previous.declaring is not None \
                and reading.added is not None:   # the reading replaced a few pieces only
            self.declaring = previous.declaring
            previous.declaring = None   # handed on
            for p in reading.replaced:
                self._forget(p)
            for p in reading.added:
                self._learn(p)
        else:
            # name -> the op piece declaring it, or a tuple of them when there are several
            self.declaring: dict = {}
            for p in reading.pieces:
                self._learn(p)
        self._functions: list = []   # (first line, last line) of each function, in text order
        self._frame_decls, self._top = self._frame()

    def _learn(self, p) -> None:
        table = self.declaring
        for name in declared_names(p):
            found = table.get(name)
            table[name] = p if found is None else (*_pieces(found), p)

    def _forget(self, p) -> None:
        table = self.declaring
        for name in declared_names(p):
            found = table.get(name)
            if found is None:
                continue
            rest = tuple(q for q in _pieces(found) if q is not p)
            if not rest:
                del table[name]
            else:
                table[name] = rest[0] if len(rest) == 1 else rest

    def _frame(self) -> tuple:
        """The declarations of the frame (function and block inputs), and the spans of the
        functions' blocks."""
        reading, layout = self.reading, self.reading.layout
        decls: dict[str, list[Decl]] = {}
        top = []
        program = reading.program
        if program is not None:
            for fn_name, fn in program.functions.items():
                if fn.loc is None:
                    continue
                fn_end = layout.span_from(fn.loc[0] - 1)[1]
                self._functions.append((fn.loc[0] - 1, fn_end))
                for v in fn.inputs:
                    self._declare(decls, v, f"input of function `{fn_name}`", ((fn.loc[0] - 1, 0), fn_end))
                for block in fn.blocks.values():
                    if block.loc is None:
                        continue
                    span = (block.loc[0] - 1, layout.span_from(block.loc[0] - 1)[1])
                    top.append(span)
                    for v in block.inputs:
                        self._declare(decls, v, f"input of the block at line {block.loc[0]}", ((span[0], 0), span[1]))
        top.sort()
        self._functions.sort()
        return decls, top

    def function_of(self, line: int) -> tuple | None:
        """(first line, last line) of the function the line is in, or None."""
        i = bisect_right(self._functions, (line, 1 << 62)) - 1
        return self._functions[i] if i >= 0 and line <= self._functions[i][1] else None

    def _declare(self, decls, v, what, scope) -> None:
        if v.loc is None:
            return
        start = (v.loc[0] - 1, v.loc[1] - 1)
        end = (start[0], written_end(self.reading.lines, start, v.name, self.syntax))
        decls.setdefault(v.name, []).append(Decl(v.name, start, end, v, what, scope))

    def _block_end(self, line: int) -> int:
        i = bisect_right(self._top, (line, 1 << 30)) - 1
        return self._top[i][1] if i >= 0 else 1 << 30

    def piece_decls(self, p) -> list[Decl]:
        """The declarations of an op piece, each with its scope."""
        return _piece_decls(p, self.syntax, self.reading, self._block_end(p.start))

    def _find_decls(self, name: str) -> list[Decl]:
        found = list(self._frame_decls.get(name, ()))
        for p in _pieces(self.declaring.get(name, ())):
            found += [d for d in self.piece_decls(p) if d.name == name]
        found.sort(key=lambda d: d.start)
        return found

    def decls_of(self, name: str) -> list[Decl]:
        """Every declaration of `name`, in text order."""
        found = self._decls.get(name)
        if found is None:
            found = self._decls[name] = self._find_decls(name)
        return found

    def occurrences_of(self, name: str) -> list[Occurrence]:
        """Every place `name` is written, in text order."""
        found = self._occurrences.get(name)
        if found is None:
            found = self._occurrences[name] = self._find_occurrences(name)
        return found

    def _find_occurrences(self, name: str) -> list[Occurrence]:
        """The declarations of `name`, and the lines the text writes it on, tokenized as a line
        is (so a name inside another token does not count)."""
        reading, bare = self.reading, self.bare
        decls = self.decls_of(name)
        out = [Occurrence(name, d.start, d.end, True) for d in decls]
        declared = {d.start for d in decls}
        pieces, starts = reading.pieces, self._piece_starts
        used_in: dict = {}
        for n in _lines_maybe_writing(reading, name, self.syntax):
            i = bisect_right(starts, n) - 1
            in_piece = i >= 0 and n < pieces[i].end
            if bare and in_piece:   # model.mil: only the names the op reads (not keys, dtypes, ...)
                if i not in used_in:
                    used_in[i] = read_names(pieces[i])
                if name not in used_in[i]:
                    continue
            out += [Occurrence(name, (n, start), (n, end), False)
                    for t, start, end in _tokens(reading.lines[n], self.syntax) if t == name and (n, start) not in declared]
        out.sort(key=lambda o: o.start)
        return out

    def names(self):
        """Every name declared in the text."""
        return set(self.declaring) | set(self._frame_decls)

    # ---- questions ----
    def at(self, pos: tuple) -> Occurrence | None:
        """The name written at `pos` (the cursor may stand just past it)."""
        line = pos[0]
        lines = self.reading.lines
        i = bisect_right(self._piece_starts, line) - 1
        if i >= 0 and line < self.reading.pieces[i].end:
            p = self.reading.pieces[i]
            decls = self.piece_decls(p)
            for d in decls:
                if d.start[0] == line and d.start[1] <= pos[1] <= d.end[1]:
                    return Occurrence(d.name, d.start, d.end, True)
            declared = {d.start for d in decls}
            used = read_names(p) if self.bare else None
            for name, start, end in _tokens(lines[line], self.syntax):
                if start <= pos[1] <= end and (line, start) not in declared and (used is None or name in used):
                    return Occurrence(name, (line, start), (line, end), False)
            return None
        for name, start, end in _tokens(lines[line] if line < len(lines) else "", self.syntax):
            if start <= pos[1] <= end:
                for o in self.occurrences_of(name):
                    if o.start == (line, start):
                        return o
        return None

    def resolve(self, o: Occurrence) -> Decl | None:
        """The declaration an occurrence refers to (itself, when it declares)."""
        found = self.decls_of(o.name)
        i = bisect_right(found, o.start, key=lambda d: d.start)
        for d in reversed(found[:i]):
            if o.declares:
                if d.start == o.start:
                    return d
                continue
            if d.scope[0] <= o.start and o.start[0] <= d.scope[1]:
                return d
        return None

    def references(self, d: Decl) -> list[Occurrence]:
        """Every occurrence that refers to `d`, its declaration first."""
        return [o for o in self.occurrences_of(d.name) if self.resolve(o) is d]

    def visible(self, pos: tuple) -> list[Decl]:
        """The declarations a name written at `pos` could refer to, one per name (worked out
        for this question, not kept)."""
        out = []
        for name in self.names():
            found = self._decls.get(name) or self._find_decls(name)
            for d in reversed(found):
                if d.start < pos and d.scope[0] <= pos and pos[0] <= d.scope[1]:
                    out.append(d)
                    break
        return out


    def sees(self, name: str, pos: tuple) -> bool:
        """Whether a declaration of `name` is visible at `pos`."""
        return any(d.start < pos and d.scope[0] <= pos and pos[0] <= d.scope[1] for d in self.decls_of(name))

    def visible_names(self, pos: tuple) -> list[str]:
        """The names of visible(pos), found without making a Decl for each name a plain op (one
        op without blocks, alone in its piece) declares: it is visible from its piece's end on
        in the block it sits in. Did-you-mean asks this of every name of a 10k-op text."""
        from ..ir.compact import CompactOperation
        i = bisect_right(self._top, (pos[0], 1 << 30)) - 1
        first = self._top[i][0] if i >= 0 and pos[0] <= self._top[i][1] else 1 << 62   # the use's block
        out = []
        for name, found in self.declaring.items():
            for p in _pieces(found):
                if type(p._ops) is not CompactOperation:   # nested blocks, or several ops: asked in full
                    if self.sees(name, pos):
                        out.append(name)
                        break
                elif first <= p.start and p.end <= pos[0]:
                    out.append(name)
                    break
        out += [name for name, decls in self._frame_decls.items()
                if any(d.start < pos and d.scope[0] <= pos and pos[0] <= d.scope[1] for d in decls)]
        return out

    def nearest_visible(self, pos: tuple, prefix: str, most: int) -> list[Decl]:
        """Those of the declarations visible at `pos` whose names start with `prefix`, the
        nearest above `pos` first, at most `most` (only those are looked at in full)."""
        line, ranked = pos[0], []
        for name, found in self.declaring.items():
            if prefix and not name.startswith(prefix):
                continue
            if type(found) is not tuple:   # most names: declared once
                if found.start <= line:
                    ranked.append((line - found.start, name))
            else:
                above = max((p.start for p in found if p.start <= line), default=None)
                if above is not None:
                    ranked.append((line - above, name))
        # the nearest, with room for those out of scope (in another function or block)
        ranked = heapq.nsmallest(4 * most, ranked) if len(ranked) > 4 * most else sorted(ranked)
        ranked += sorted((1 << 62, name) for name in self._frame_decls if name.startswith(prefix))
        out, seen = [], set()
        for _, name in ranked:
            if len(out) >= most:
                break
            if name in seen:
                continue
            seen.add(name)
            for d in reversed(self.decls_of(name)):
                if d.start < pos and d.scope[0] <= pos and pos[0] <= d.scope[1]:
                    out.append(d)
                    break
        return out


def _pieces(found) -> tuple:
    return found if type(found) is tuple else (found,)


# How each syntax writes a name: MIL's %name or %"quoted", a coremltools print's raw %name,
# model.mil's bare name.
_NAME_PATTERN = {"mil": VAR, "raw": RAW_VAR, "modelmil": BARE_NAME}
# A name, or what is stepped over whole on a line: a string (a print's are raw, as its parser
# reads them) or a comment, so that a name inside one is not taken for a use.
_STEP_OVER = {"mil": lexicon.STRINGS_TO_EOL + "|#.*", "raw": lexicon.RAW_STRINGS_TO_EOL + "|#.*",
              "modelmil": lexicon.STRING_TO_EOL}
_NAMES_ON_A_LINE = {syntax: re.compile(f"(?P<name>{pattern.pattern})|{_STEP_OVER[syntax]}")
                    for syntax, pattern in _NAME_PATTERN.items()}


def syntax_of(reading) -> str:
    """"modelmil", "raw" (a coremltools print) or "mil": how the text writes names."""
    return "modelmil" if reading.modelmil else "raw" if reading.raw else "mil"


def _written(name: str, syntax: str) -> str:
    from ..text.lexemes import var
    return name if syntax == "modelmil" else "%" + name if syntax == "raw" else var(name)


def _tokens(line: str, syntax: str):
    """(name, start column, end column) of each name written on a line."""
    for m in _NAMES_ON_A_LINE[syntax].finditer(line):
        token = m.group("name")
        if token is not None:
            yield (token if syntax == "modelmil" else var_name(token) if syntax == "mil" else token[1:]), m.start(), m.end()


def written_end(lines, start: tuple, name: str, syntax: str) -> int:
    """The column where the name declared at `start` ends as the text writes it: %"a" is %a,
    and a quoted name may hold its characters as they are or escaped."""
    if syntax != "modelmil" and start[0] < len(lines):
        m = _NAME_PATTERN[syntax].match(lines[start[0]], start[1])
        if m is not None:
            return m.end()
    return start[1] + len(_written(name, syntax))


def _lines_maybe_writing(reading, name: str, syntax: str):
    """The lines (0-based, ascending, each once) that may write `name`: where its canonical
    spelling appears, and (MIL) where it may be quoted otherwise: %"name" as it is, or a
    quoted name with escapes."""
    text, written = reading.text, _written(name, syntax)
    found = set(_lines_writing(text, written))
    if syntax == "mil":
        quoted = '%"' + name + '"'
        if quoted != written:
            found.update(_lines_writing(text, quoted))
        if "\\" in text:
            lines = reading.lines
            found.update(n for n in _lines_writing(text, '%"') if n not in found and "\\" in lines[n])
    return sorted(found)


def _lines_writing(text: str, written: str):
    """The lines (0-based, ascending, each once) on which `written` appears."""
    line, at, last = 0, 0, -1
    find, count = text.find, text.count
    i = find(written)
    while i >= 0:
        line += count("\n", at, i)
        at = i
        if line != last:
            yield line
            last = line
        i = find(written, i + 1)


def _ops_of(p):
    """The ops of a piece, with those of the blocks they own."""
    from ..ir.walk import operations
    return operations(list(p.ops))


def declared_names(p) -> set:
    """The names an op piece declares (its ops' outputs, its blocks' inputs)."""
    out = set()
    for op in _ops_of(p):
        out.update(v.name for v in op.outputs)
        for b in op.blocks:
            out.update(v.name for v in b.inputs)
    return out


def read_names(p) -> set:
    """The names an op piece reads (its ops' inputs, its blocks' outputs)."""
    out = set()
    for op in _ops_of(p):
        for bindings in op.inputs.values():
            out.update(b for b in bindings if isinstance(b, str))
        for b in op.blocks:
            out.update(n for n in b.outputs if isinstance(n, str))
    return out


def _piece_decls(p, syntax: str, reading, top_end: int) -> list[Decl]:
    """The declarations of an op piece, in places of the text; `top_end` is the last line of
    the block the piece's op sits in. (A loop, not nested functions calling each other: those
    would make a reference cycle holding the text's lines until the next collection.)"""
    decls = []
    # (op, where its outputs' scope starts, the last line of it)
    todo = [(op, (p.end, 0), top_end) for op in reversed(p.ops)]
    while todo:
        op, scope_start, scope_end = todo.pop()
        what = f"`{op.type}` op" + (f" {quote(op.name)}" if op.name is not None else "")
        if op.loc:
            what += f", line {op.loc[0]}"
        for v in op.outputs:
            _add_decl(decls, v, f"output of {what}", (scope_start, scope_end), syntax, reading.lines)
        inner = []
        for block in op.blocks:
            if block.loc is None:
                continue
            end = _block_end(reading, block.loc[0] - 1, p.end - 1)
            for v in block.inputs:
                _add_decl(decls, v, f"input of the block at line {block.loc[0]}", ((block.loc[0] - 1, 0), end), syntax,
                          reading.lines)
            inner += [(o, (o.loc[0], 0) if o.loc else (p.start, 0), end) for o in block.operations]
        todo += reversed(inner)
    return decls


def _add_decl(decls: list, v, what: str, scope: tuple, syntax: str, lines) -> None:
    if v.loc is None:
        return
    start = (v.loc[0] - 1, v.loc[1] - 1)
    decls.append(Decl(v.name, start, (start[0], written_end(lines, start, v.name, syntax)), v, what, scope))


def _block_end(reading, first: int, last: int) -> int:
    """The line on which the block opened on line `first` closes (`last` at the latest)."""
    lines, memo = reading.lines, reading.memo
    depth, opened = 0, False
    for n in range(first, last + 1):
        for _, c in marks_of(memo, lines[n])[0]:
            if c == "{":
                depth, opened = depth + 1, True
            elif c == "}":
                depth -= 1
        if opened and depth <= 0:
            return n
    return last
