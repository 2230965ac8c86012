"""The layer of MIL text the parser skips: where the comments are, which brackets match, and
where the code before a place ends. Read only when a file is formatted, never by `loads`.

The scan knows strings and comments and nothing else of the grammar: that is all it takes to
tell a `#` or a bracket in code from one in a string."""
from __future__ import annotations

import bisect
import re

# Comments, strings (escaped, as miltext writes them; b64"..." is one too) and brackets.
_ESCAPED = re.compile(r"""(#[^\n]*)|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|([(\[{])|([)\]}])""")
# coremltools' print: strings and %names are raw (see text.parser._RAW_OVERRIDES).
_RAW = re.compile(r"""%(?:[^\s,()\[\]=:]|:(?!\s))+|(#[^\n]*)"""
                  r"""|"(?:[^"]|"(?![,)\]]|\s*\)))*"(?=\s*[,)\]])|"[^"\n]*"|'(?:[^'\\\n]|\\.)*'"""
                  r"""|([(\[{])|([)\]}])""")


class Comment:
    __slots__ = ("start", "end", "text", "own_line", "blank_before")

    def __init__(self, start: int, end: int, text: str, own_line: bool):
        self.start, self.end, self.text, self.own_line = start, end, text.rstrip(), own_line
        self.blank_before = False

    def __repr__(self) -> str:
        return f"Comment({self.text!r})"


class Scan:
    """Offsets into one text: its comments, each opening bracket's match, its line starts."""

    def __init__(self, text: str, raw: bool = False):
        self.text = text
        self.comments: list[Comment] = []
        self.openers: list[int] = []        # offsets of opening brackets, in order
        self.closer_of: dict[int, int] = {}  # opening offset -> its closing bracket's offset
        stack = []
        for m in (_RAW if raw else _ESCAPED).finditer(text):
            comment, opening, closing = m.groups()
            if opening:
                self.openers.append(m.start())
                stack.append(m.start())
            elif closing:
                if stack:
                    self.closer_of[stack.pop()] = m.start()
            elif comment:
                start = m.start()
                line_start = text.rfind("\n", 0, start) + 1
                self.comments.append(Comment(start, m.end(), comment, not text[line_start:start].strip()))
        self._comment_starts = [c.start for c in self.comments]
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def offset(self, loc: tuple) -> int:
        """The offset of a parser place (1-based line and column)."""
        line, column = loc
        return self.line_starts[line - 1] + column - 1

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset)

    def body(self, start: int) -> tuple[int, int] | None:
        """The braces of the body that a function or block starting at `start` opens: the first
        `{` after it outside the brackets of its opset, inputs and attributes."""
        i = bisect.bisect_left(self.openers, start)
        while i < len(self.openers):
            at = self.openers[i]
            close = self.closer_of.get(at)
            if close is None:
                return None
            if self.text[at] == "{":
                return at, close
            i = bisect.bisect_right(self.openers, close)
        return None

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

    def blank_between(self, start: int, end: int) -> bool:
        """Whether text[start:end], white space, holds an empty line."""
        return self.text.count("\n", start, end) >= 2
