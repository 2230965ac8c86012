"""How a MIL text divides into pieces the language server parses one at a time: the frame
(model section, program header, function and block headers, block ends) and the ops, each op
with the lines it spans and the blocks it owns.

Both dialects nest the same way: ops sit two braces deep (miltext's `function { block { ...`,
model.mil's `program { func { ...`), except inside a model section. An op starts on a line at
that depth outside brackets; a line there that opens a brace outside brackets is a block the
op before it owns. Brackets are counted outside strings and comments, one line at a time
(strings end on their line in both dialects), so a line's brackets are worked out once for each
content it has (for the few that need it).

A bracket left open does not swallow the rest of the text: a line that plainly starts an op
(`%y: ... = op(` or model.mil's `tensor<...> y = op(`) at op depth ends the op before it, which
is then reported once, at the bracket it leaves open.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right

# A string, a comment, a bracket, or a run of anything else, on one line.
_BRACKETS = re.compile(r'"(?:[^"\\\n]|\\.)*"?|\'(?:[^\'\\\n]|\\.)*\'?|#.*|([(){}\[\]])|[^"\'#(){}\[\]]+')
_PAIRS = {")": "(", "]": "[", "}": "{"}
OP_DEPTH = 2
# Lines that can only start an op: outputs, `=`, an op type and its parenthesis.
_OP_START = {
    "mil": re.compile(r'\s*%\S[^=]*=\s*[A-Za-z_][\w.]*\s*(?:\[[^\]]*\])?\s*\('),
    "modelmil": re.compile(r'\s*(?:tensor|list|tuple|dict|state|string|bool|u?int\d+|fp\d+|bf16)\b[^=]*\b[A-Za-z_]\w*\s*=\s*[A-Za-z_]\w*\s*\('),
}
_MODEL = re.compile(r'\s*model\b')
_BALANCED, _OPENS_BLOCK = ((), False), ((), True)
# Strings (as _BRACKETS reads them) and whatever is not a bracket: what leaves only brackets.
_NOT_BRACKETS = re.compile(r'"(?:[^"\\\n]|\\.)*"?|[^"(){}\[\]]+')


class Piece:
    """Lines [start, end) of one op (with its blocks), 0-based; `unclosed` is (line, column,
    bracket) of a bracket it leaves open, or None. One for each op of the text, so it keeps its
    length rather than its end: a small number, most often 1, which Python does not store
    again for each piece."""
    __slots__ = ("start", "lines", "unclosed")

    def __init__(self, start: int, end: int, unclosed: tuple | None = None):
        self.start, self.lines, self.unclosed = start, end - start, unclosed

    @property
    def end(self) -> int:
        return self.start + self.lines

    @end.setter
    def end(self, end: int) -> None:
        self.lines = end - self.start

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.start}, {self.end}, {self.unclosed!r})"


class Layout:
    """The op pieces of a text, and the frame lines (all the others)."""
    piece = Piece   # what a piece is made as (a subclass may carry more)

    def __init__(self, lines: list[str], dialect: str, memo: dict | None = None):
        self.dialect = dialect
        self.memo = {} if memo is None else memo
        self.pieces: list[Piece] = []
        self.frame: list[int] = []        # lines outside every op
        self.unclosed_braces: list = []   # (line, column, "{") of frame braces left open
        self.spans: list = []             # (opening line, closing line, its column) of each frame brace
        self.kept = None                  # (i, n, k): pieces [:i] and [i + n:] are the old [:i] and [k:]
        if lines is None:
            return
        braces, brackets, piece = self._scan(lines, 0, len(lines), [])
        if piece is not None and brackets:
            piece.unclosed = brackets[0]
        self.unclosed_braces = [(b[0], b[1], "{") for b in braces if not b[3]]
        self.spans.sort()

    def updated(self, old_lines: list[str], lines: list[str], first: int, end_old: int, end_new: int) -> "Layout":
        """The layout of `lines`, which differ from this layout's text in lines [first,
        end_old) only (now [first, end_new)): when the change lies among the ops of one block,
        only the ops it touches are laid out again. This layout is not to be used afterwards."""
        delta = end_new - end_old
        pieces = self.pieces
        i = bisect_right(pieces, first, key=lambda p: p.start) - 1
        k = bisect_left(pieces, end_old, key=lambda p: p.start)
        if i < 0 or k >= len(pieces) or any(b[0] >= pieces[i].start for b in self.unclosed_braces):
            return type(self)(lines, self.dialect, self.memo)
        start, stop_old = pieces[i].start, pieces[k].start
        lo, hi = bisect_left(self.frame, start), bisect_left(self.frame, stop_old)
        if any(_is_structure(old_lines[n]) for n in self.frame[lo:hi]):
            return type(self)(lines, self.dialect, self.memo)
        out = type(self)(None, self.dialect, self.memo)
        out.pieces = pieces[:i]
        out.frame = self.frame[:lo]
        ops_level = [(start, 0, False, False)] * OP_DEPTH
        braces, brackets, piece = out._scan(lines, start, stop_old + delta, list(ops_level))
        if braces != ops_level or any(_is_structure(lines[n]) for n in out.frame[lo:]):
            return type(self)(lines, self.dialect, self.memo)
        if piece is not None and brackets:
            piece.unclosed = brackets[0]
        if delta:   # else each start stays the int it is (n + 0 is a new one: twice the ints)
            for p in pieces[k:]:
                p.start += delta
                if p.unclosed is not None:
                    p.unclosed = (p.unclosed[0] + delta, *p.unclosed[1:])
        out.kept = (i, len(out.pieces) - i, k)
        out.pieces += pieces[k:]
        out.frame += [n + delta for n in self.frame[hi:]] if delta else self.frame[hi:]
        moved = lambda n: n + delta if n >= stop_old else n  # noqa: E731
        out.spans = [(moved(a), moved(b), c) for a, b, c in self.spans]
        out.unclosed_braces = [(moved(a), b, c) for a, b, c in self.unclosed_braces]
        return out

    def _scan(self, lines: list[str], start: int, stop: int, braces: list) -> tuple:
        """Lay out lines [start, stop) from the open `braces`; the state at the end."""
        memo, op_start = self.memo, _OP_START[self.dialect]
        brackets: list = []   # (line, column, char) of each open ( or [
        piece = None
        for n in range(start, stop):
            line = lines[n]
            marks, opens_block = marks_of(memo, line)
            depth = len(braces)
            at_ops = depth == OP_DEPTH and not braces[0][2]
            stripped = line.lstrip()
            continuing = piece is not None and bool(brackets or depth > OP_DEPTH)
            if continuing and brackets and at_ops and (op_start.match(line) or stripped.startswith("}")):
                piece.unclosed = brackets[0]     # the op before never closed: it ends here
                brackets, continuing = [], False
                if stripped.startswith("}"):
                    piece = None
            in_piece = continuing
            if not continuing and at_ops and stripped and not stripped.startswith(("#", "}")):
                if piece is None or not opens_block or op_start.match(line):
                    piece = self.piece(n, n + 1)  # else a block of the op before
                    self.pieces.append(piece)
                in_piece = True
            elif not continuing and not (at_ops and (not stripped or stripped.startswith("#"))):
                piece = None                     # blank lines and comments keep the op open for its blocks
            if in_piece:
                piece.end = n + 1
            else:
                self.frame.append(n)
            for column, c in marks:
                if c in "([":
                    brackets.append((n, column, c))
                elif c in ")]":
                    if brackets and brackets[-1][2] == _PAIRS[c]:
                        brackets.pop()
                elif c == "{":
                    in_model = braces[0][2] if braces else bool(_MODEL.match(line))
                    braces.append((n, column, in_model, in_piece))
                    if not in_piece:
                        brackets = []            # a header's brackets end with its brace
                elif braces:
                    opened = braces.pop()
                    if not opened[3]:
                        self.spans.append((opened[0], n, column))
        return braces, brackets, piece

    def span_from(self, line: int) -> tuple:
        """(opening line, closing line, closing column) of the first frame brace opened on
        `line` or after (a header's brace); the end of the text when there is none."""
        i = bisect_left(self.spans, (line, -1, -1))
        return self.spans[i] if i < len(self.spans) else (line, 1 << 30, 0)

    def is_frame(self, line: int) -> bool:
        i = bisect_left(self.frame, line)
        return i < len(self.frame) and self.frame[i] == line


def marks_of(memo: dict, line: str) -> tuple:
    """A line's brackets (see _marks), from `memo` when it has them. The memo keeps only the
    lines that leave a bracket open or open a block (headers, the lines of a long op), so it
    does not keep a second copy of the text; any other line has none."""
    found = memo.get(line)
    if found is None:
        found = _marks(line)
        if found is not _BALANCED:
            memo[line] = found
    return found


def _plainly_balanced(line: str) -> bool:
    """Whether a line without comments or single quotes closes every ( and [ it opens, in order,
    outside its strings, and has no brace: most op lines, told at C speed (a layout of a whole
    text asks this of each line, since the memo keeps no balanced ones)."""
    if "#" in line or "'" in line:
        return False
    brackets = _NOT_BRACKETS.sub("", line)
    if "{" in brackets or "}" in brackets:
        return False
    while brackets:
        fewer = brackets.replace("()", "").replace("[]", "")
        if fewer == brackets:
            return False
        brackets = fewer
    return True


def _is_structure(line: str) -> bool:
    """A frame line that is more than white space or a comment."""
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def _marks(line: str) -> tuple:
    """The brackets of a line outside strings and comments that it leaves unmatched, as
    (column, bracket) (a balanced op line has none), and whether it opens a brace outside
    brackets (a block header)."""
    if _plainly_balanced(line):
        return _BALANCED
    kept, depth, opens_block = [], 0, False
    for m in _BRACKETS.finditer(line):
        c = m.group(1)
        if not c:
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            opens_block = True
        if c in _PAIRS and kept and kept[-1][1] == _PAIRS[c]:
            kept.pop()
        else:
            kept.append((m.start(), c))
    if not kept:   # most lines
        return _OPENS_BLOCK if opens_block else _BALANCED
    return tuple(kept), opens_block
