"""Every name written in a text, where it is, and which declaration it refers to: what hover,
go to definition, references, rename, highlight and completion answer from.

The scoping is miltext.refs's (a block sees its function's inputs, its enclosing blocks' names
defined before it, its own inputs and earlier outputs; a later definition replaces an earlier
one), applied to places in the text instead of to the object model: the language server must
answer at once after an edit, and refs walks the whole program. So each op's names are worked
out once for each text the op has (kept on its OpPiece, in lines counted from the op's first),
and a declaration is visible from the end of its op to the end of its block.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from ..text.lexemes import quote, var_name
from .source import BARE_NAME, VAR


@dataclass
class Decl:
    name: str
    start: tuple        # (line, column), 0-based
    end: tuple
    var: object         # the ir.Var
    what: str           # "input of function `main`", "output of `relu` op "r", line 4", ...
    scope: tuple        # (first place, last line) where the name refers to it


@dataclass
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
        self._piece_starts = [p.piece.start for p in reading.pieces]
        self._decls: dict = {}   # name -> [Decl], sorted, made when first asked
        self._occurrences: dict = {}
        if previous is not None and previous.bare == self.bare:
            self.declaring, self.mentioning = previous.declaring, previous.mentioning
            previous.declaring = previous.mentioning = None   # handed on
            if reading.added is not None:
                gone, new = reading.replaced, reading.added
            else:
                now, was = {id(p) for p in reading.pieces}, {id(p) for p in previous.reading.pieces}
                gone = [p for p in previous.reading.pieces if id(p) not in now]
                new = [p for p in reading.pieces if id(p) not in was]
            for p in gone:
                self._forget(p)
            for p in new:
                self._learn(p)
        else:
            self.declaring: dict[str, list] = {}    # name -> the op pieces declaring it
            self.mentioning: dict[str, list] = {}   # name -> the op pieces where it is written
            for p in reading.pieces:
                self._learn(p)
        self._frame_decls, self._top = self._frame()

    def _learn(self, p) -> None:
        decls, occurrences = _piece_info(p, self.bare, self.reading.memo)
        for name in {d[0] for d in decls}:
            self.declaring.setdefault(name, []).append(p)
        for name in {o[0] for o in occurrences}:
            self.mentioning.setdefault(name, []).append(p)

    def _forget(self, p) -> None:
        decls, occurrences = _piece_info(p, self.bare, self.reading.memo)
        for table, names in ((self.declaring, {d[0] for d in decls}), (self.mentioning, {o[0] for o in occurrences})):
            for name in names:
                found = table.get(name)
                if found is not None:
                    found[:] = [q for q in found if q is not p]
                    if not found:
                        del table[name]

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
        return decls, top

    def _declare(self, decls, v, what, scope) -> None:
        if v.loc is None:
            return
        start = (v.loc[0] - 1, v.loc[1] - 1)
        end = (start[0], start[1] + len(_written(v.name, self.bare)))
        decls.setdefault(v.name, []).append(Decl(v.name, start, end, v, what, scope))

    def _block_end(self, line: int) -> int:
        i = bisect_right(self._top, (line, 1 << 30)) - 1
        return self._top[i][1] if i >= 0 else 1 << 30

    def decls_of(self, name: str) -> list[Decl]:
        """Every declaration of `name`, in text order."""
        found = self._decls.get(name)
        if found is None:
            found = list(self._frame_decls.get(name, ()))
            for p in self.declaring.get(name, ()):
                base = p.piece.start
                block_end = self._block_end(base)
                for n, start, end, v, what, scope_start, scope_end in _piece_info(p, self.bare, self.reading.memo)[0]:
                    if n == name:
                        found.append(Decl(n, (base + start[0], start[1]), (base + end[0], end[1]), v, what,
                                          ((base + scope_start[0], scope_start[1]),
                                           block_end if scope_end is None else base + scope_end)))
            found.sort(key=lambda d: d.start)
            self._decls[name] = found
        return found

    def occurrences_of(self, name: str) -> list[Occurrence]:
        """Every place `name` is written, in text order."""
        found = self._occurrences.get(name)
        if found is None:
            found = []
            for p in self.mentioning.get(name, ()):
                base = p.piece.start
                found += [Occurrence(n, (base + start[0], start[1]), (base + end[0], end[1]), declares)
                          for n, start, end, declares in _piece_info(p, self.bare, self.reading.memo)[1] if n == name]
            declared = {d.start for d in self._frame_decls.get(name, ())}
            for n in self.reading.layout.frame:
                found += [Occurrence(t, (n, start), (n, end), (n, start) in declared)
                          for t, start, end in _tokens(self.reading.lines[n], self.bare) if t == name]
            found.sort(key=lambda o: o.start)
            self._occurrences[name] = found
        return found

    def names(self):
        """Every name declared in the text."""
        return set(self.declaring) | set(self._frame_decls)

    # ---- questions ----
    def at(self, pos: tuple) -> Occurrence | None:
        """The name written at `pos` (the cursor may stand just past it)."""
        line = pos[0]
        i = bisect_right(self._piece_starts, line) - 1
        if i >= 0 and line < self.reading.pieces[i].piece.end:
            p = self.reading.pieces[i]
            base = p.piece.start
            for name, start, end, declares in _piece_info(p, self.bare, self.reading.memo)[1]:
                if start[0] + base == line and start[1] <= pos[1] <= end[1]:
                    return Occurrence(name, (line, start[1]), (line, end[1]), declares)
            return None
        for name, start, end in _tokens(self.reading.lines[line] if line < len(self.reading.lines) else "", self.bare):
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
        """The declarations a name written at `pos` could refer to, one per name."""
        out = []
        for name in self.names():
            for d in reversed(self.decls_of(name)):
                if d.start < pos and d.scope[0] <= pos and pos[0] <= d.scope[1]:
                    out.append(d)
                    break
        return out


def _written(name: str, bare: bool) -> str:
    from ..text.lexemes import var
    return name if bare else var(name)


def _tokens(line: str, bare: bool):
    """(name, start column, end column) of each name written on a line."""
    for m in (BARE_NAME if bare else VAR).finditer(line):
        token = m.group()
        yield (token if bare else var_name(token)), m.start(), m.end()


def _piece_info(p, bare: bool, memo: dict) -> tuple:
    """(declarations, occurrences) of an op piece, in lines counted from its first: worked out
    once for each text the piece has (kept on it)."""
    if getattr(p, "names", None) is not None:
        return p.names
    lines = p.text.split("\n")
    base = p.line
    decls, declared_at, used = [], set(), set()

    def declare(v, what, scope_start, scope_end):
        if v.loc is None:
            return
        start = (v.loc[0] - 1 - base, v.loc[1] - 1)
        end = (start[0], start[1] + len(_written(v.name, bare)))
        declared_at.add(start)
        decls.append((v.name, start, end, v, what, scope_start, scope_end))

    def block_end(block) -> int:
        first = block.loc[0] - 1 - base
        depth, opened = 0, False
        for n in range(first, len(lines)):
            marks = memo.get(lines[n]) or ((), False)
            for _, c in marks[0]:
                if c == "{":
                    depth, opened = depth + 1, True
                elif c == "}":
                    depth -= 1
            if opened and depth <= 0:
                return n
        return len(lines) - 1

    def visit_block(block):
        if block.loc is None:
            return
        end = block_end(block)
        where = f"the block at line {block.loc[0]}"
        for v in block.inputs:
            declare(v, f"input of {where}", (block.loc[0] - 1 - base, 0), end)
        used.update(n for n in block.outputs if isinstance(n, str))
        for op in block.operations:
            visit_op(op, ((op.loc[0] - base, 0) if op.loc else (0, 0)), end)

    def visit_op(op, scope_start, scope_end):
        what = f"`{op.type}` op" + (f" {quote(op.name)}" if op.name is not None else "")
        if op.loc:
            what += f", line {op.loc[0]}"
        for v in op.outputs:
            declare(v, f"output of {what}", scope_start, scope_end)
        for bindings in op.inputs.values():
            used.update(b for b in bindings if isinstance(b, str))
        for inner in op.blocks:
            visit_block(inner)

    for op in p.ops:
        visit_op(op, (len(lines), 0), None)
    # model.mil's declarations are written `name =`, which is not a name's look elsewhere
    occurrences = [(name, start, end, True) for name, start, end, *_ in decls]
    for n, line in enumerate(lines):
        for name, start, end in _tokens(line, bare):
            if (n, start) not in declared_at and (not bare or name in used):
                occurrences.append((name, (n, start), (n, end), False))
    occurrences.sort(key=lambda o: o[1])
    p.names = (decls, occurrences)
    return p.names
