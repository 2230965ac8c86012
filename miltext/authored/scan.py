"""The layer of MIL text the parser skips: where the comments are, which brackets match, and
where the code before a place ends. Read only when a file is formatted, never by `loads`.

The scan knows strings and comments and nothing else of the grammar: that is all it takes to
tell a `#` or a bracket in code from one in a string."""
from __future__ import annotations

import bisect
import itertools
import re

from ..text import lexicon

_KEY = re.compile(lexicon.NAME + r"(?=[ \t]*=(?!=))")


class Comment:
    __slots__ = ("start", "end", "text", "own_line", "blank_before")

    def __init__(self, start: int, end: int, text: str, own_line: bool):
        self.start, self.end, self.text, self.own_line = start, end, text.rstrip(), own_line
        self.blank_before = False

    def __repr__(self) -> str:
        return f"Comment({self.text!r})"


class Scan:
    """Offsets into one text: its comments and strings (found in one pass), its line starts;
    brackets are followed from a given place on when asked."""

    def __init__(self, text: str, raw: bool = False):
        self.text, self.raw = text, raw
        self.comments: list[Comment] = []
        self.strings: list[int] = []         # start, end, start, end, ... of each string
        # comments and strings (lexicon.scanner: escaped as miltext writes them, or raw as
        # coremltools' print does; b64"..." is a string too)
        for m in lexicon.scanner(raw, brackets=False).finditer(text):
            kind = m.lastgroup
            if kind == "string":
                self.strings += m.span()
            elif kind == "comment":
                start = m.start()
                line_start = text.rfind("\n", 0, start) + 1
                self.comments.append(Comment(start, m.end(), m.group(), not text[line_start:start].strip()))
        self._comment_starts = [c.start for c in self.comments]
        self.line_starts = [0, *itertools.accumulate(len(line) + 1 for line in text.split("\n"))][:-1]

    def offset(self, loc: tuple) -> int:
        """The offset of a parser place (1-based line and column)."""
        line, column = loc
        return self.line_starts[line - 1] + column - 1

    def opening(self, start: int) -> int | None:
        """Where the `{` is that a function or block written at `start` opens its body with:
        the first after it outside the brackets of its opset, inputs and attributes."""
        depth = 0
        for at, ch in self._brackets(start):
            if depth == 0 and ch == "{":
                return at
            depth += 1 if ch in "([{" else -1
        return None

    def closing(self, start: int) -> int | None:
        """Where the first bracket after `start` is that closes one opened before it."""
        depth = 0
        for at, ch in self._brackets(start):
            if ch in ")]}":
                if depth == 0:
                    return at
                depth -= 1
            else:
                depth += 1
        return None

    def _brackets(self, start: int):
        for m in lexicon.scanner(self.raw).finditer(self.text, start):
            if m.lastgroup == "open" or m.lastgroup == "close":
                yield m.start(), m.group()

    def code_end(self, before: int, after: int = 0) -> int:
        """Just past the last character of code before `before` (and not before `after`):
        white space and comments skipped."""
        text, p = self.text, before
        while p > after:
            if text[p - 1].isspace():
                p -= 1
                continue
            i = bisect.bisect_right(self._comment_starts, p - 1) - 1
            if i >= 0 and self.comments[i].start < p <= self.comments[i].end:
                p = self.comments[i].start
                continue
            break
        return p

    def code_after(self, start: int) -> int | None:
        """Where the first code at or after `start` is: white space and comments skipped."""
        text, p = self.text, start
        i = bisect.bisect_left(self._comment_starts, start)
        while p < len(text):
            if text[p].isspace():
                p += 1
            elif i < len(self.comments) and self.comments[i].start == p:
                p = self.comments[i].end
                i += 1
            else:
                return p
        return None

    def call_keys(self, start: int, end: int, outputs: bool) -> tuple[int, list] | None:
        """Of the op written at text[start:end] (with outputs before an `=`, or not): where its
        `(` is, and (offset, key) for each of its arguments; None when they cannot be told."""
        code = self._code_only(start, end)
        depth, at, call = 0, 0, None
        if outputs:  # the op's `=` is the first outside brackets
            while at < len(code) and not (depth == 0 and code[at] == "="):
                depth += code[at] in "([{"
                depth -= code[at] in ")]}"
                at += 1
        while at < len(code):
            ch = code[at]
            if depth == 0 and ch == "(":
                call = at
                break
            depth += ch in "([{"
            depth -= ch in ")]}"
            at += 1
        if call is None:
            return None
        keys, depth, expect = [], 0, True  # expect: just after the `(` or a `,`
        for at in range(call, len(code)):
            ch = code[at]
            if ch in "([{":
                depth += 1
            elif ch in ")]}":
                depth -= 1
                if depth == 0:
                    break
            elif depth == 1 and ch == ",":
                expect = True
            elif depth == 1 and expect and not ch.isspace():
                m = _KEY.match(code, at)
                if m:
                    keys.append((start + at, m.group()))
                expect = False
        return start + call, keys

    def _code_only(self, start: int, end: int) -> str:
        """text[start:end] with its strings and comments blanked out."""
        code = list(self.text[start:end])
        spans = [(c.start, c.end) for c in self.comments if start <= c.start < end]
        i = bisect.bisect_left(self.strings, start)
        i -= i % 2
        while i < len(self.strings) and self.strings[i] < end:
            spans.append((self.strings[i], self.strings[i + 1]))
            i += 2
        for a, b in spans:
            for p in range(max(a, start), min(b, end)):
                code[p - start] = " "
        return "".join(code)

    def blank_between(self, start: int, end: int) -> bool:
        """Whether text[start:end], white space, holds an empty line."""
        return self.text.count("\n", start, end) >= 2
