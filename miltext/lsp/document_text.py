"""Where things stand in a MIL text: the token at a place, the %name under the cursor, and how
far a braced body reaches. The object model keeps only where each thing starts.

Places here are (line, column), 0-based, in code points, as the server speaks to pygls; the
object model's `loc` is 1-based (`from_loc`).
"""
from __future__ import annotations

import re
from array import array
from bisect import bisect_right

import numpy as np

from ..text import lexicon
from .positions import line_starts, offset_of, place_of, same_lines

VAR = re.compile(lexicon.VAR)
# a coremltools print writes a name raw, up to the colon-space before its type (as its parser reads it)
RAW_VAR = re.compile(lexicon.RAW_VAR)
BARE_NAME = re.compile(r'(?<![\w."])[A-Za-z_][A-Za-z0-9_]*(?![\w"]|\s*(?:=(?!=)|[(<]))')
# One token at an error's place: a var, a string, a word or number, else one character.
_TOKEN = re.compile(f'{lexicon.VAR}|{lexicon.STRING_TO_EOL}'
                    r'|[A-Za-z0-9_.+\-]+|\S')
# The brace scanner: strings and comments whole, each bracket alone.
_SCAN = lexicon.scanner()
_OPEN, _CLOSE = ("(", "[", "{"), (")", "]", "}")
_OUTPUTS = re.compile(r'\s*->\s*\((?:"(?:[^"\\]|\\.)*"|[^)"])*\)')


def from_loc(loc: tuple) -> tuple:
    return (loc[0] - 1, loc[1] - 1)


class Lines:
    """The lines of a text (split at \n only, as the parser counts them), each cut from the text
    when asked: a list of them would be a second copy of the text, kept as long as it is open."""
    __slots__ = ("text", "starts")

    def __init__(self, text: str):
        self.text = text
        # offset of line n: the lengths of the lines before it, and their n line breaks (numpy
        # adds them up: this is done for each edit)
        parts = text.split("\n")
        offsets = np.zeros(len(parts), np.int64)
        np.cumsum(np.fromiter(map(len, parts[:-1]), np.int64, len(parts) - 1) + 1, out=offsets[1:])
        self.starts = array("q")
        self.starts.frombytes(offsets.tobytes())

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, n):
        if isinstance(n, slice):
            return [self[i] for i in range(*n.indices(len(self.starts)))]
        starts = self.starts
        if n < 0:
            n += len(starts)
        if not 0 <= n < len(starts):
            raise IndexError("line out of range")
        return self.text[starts[n]:starts[n + 1] - 1 if n + 1 < len(starts) else len(self.text)]

    def __iter__(self):
        return iter(self.text.split("\n"))

    def span(self, start: int, end: int) -> str:
        """Lines [start, end) as one text."""
        starts = self.starts
        return self.text[starts[start]:starts[end] - 1 if end < len(starts) else len(self.text)]


class Source:
    def __init__(self, text: str, lines: Lines | None = None):
        self.text = text
        self.lines = Lines(text) if lines is None else lines
        self.layout = None   # a lsp.pieces.Layout of the text, when there is one: where its frame braces close
        self._ascii = None
        self._client_starts = None

    @property
    def ascii(self) -> bool:
        """Whether the text is all ASCII (most are): then a place counts the same in code
        points, UTF-16 and UTF-8 units."""
        if self._ascii is None:
            self._ascii = self.text.isascii()
        return self._ascii

    @property
    def client_starts(self) -> array:
        """The offset of each line as the client counts them (see positions)."""
        if self._client_starts is None:
            self._client_starts = self.lines.starts if same_lines(self.text) else line_starts(self.text)
        return self._client_starts

    @property
    def plain(self) -> bool:
        """Whether the client's places are the server's (ASCII, no lone \\r)."""
        return self.ascii and self.client_starts is self.lines.starts

    def from_client(self, line: int, character: int, units) -> tuple:
        """The place the client's (line, character in `units`) names."""
        return self.position(offset_of(self.text, self.client_starts, line, character, units))

    def to_client(self, pos: tuple, units) -> tuple:
        """The client's (line, character in `units`) of a place (one past its line or the text
        is the end of it)."""
        starts = self._starts
        if pos[0] >= len(starts):
            offset = len(self.text)
        else:
            end = starts[pos[0] + 1] - 1 if pos[0] + 1 < len(starts) else len(self.text)
            offset = min(starts[pos[0]] + pos[1], end)
        return place_of(self.text, self.client_starts, offset, units)

    @property
    def _starts(self) -> array:
        """The offset of each line."""
        return self.lines.starts

    def line(self, n: int) -> str:
        return self.lines[n].rstrip("\r") if 0 <= n < len(self.lines) else ""

    def offset(self, pos: tuple) -> int:
        return self._starts[pos[0]] + pos[1]

    def position(self, offset: int) -> tuple:
        line = bisect_right(self._starts, offset) - 1
        return (line, offset - self._starts[line])

    def token_range(self, pos: tuple) -> tuple:
        """(start, end) of the token at `pos` (an opening bracket: through its closing one, when
        that is on the same line); an empty range past the end of the line."""
        line = self.line(pos[0])
        m = _TOKEN.match(line, pos[1])
        if m is None:
            return pos, pos
        if m.group() in _OPEN:
            depth = 0
            for part in _SCAN.finditer(line, pos[1]):
                depth += (part.group() in _OPEN) - (part.group() in _CLOSE)
                if depth == 0:
                    return pos, (pos[0], part.end())
        return pos, (pos[0], m.end())

    def braced_end(self, start: tuple, outputs: bool = False) -> tuple:
        """(closing brace, end) of the body that the first `{` outside brackets after `start`
        opens; with `outputs`, the end takes in the block's `-> (...)` after it."""
        layout, text = self.layout, self.text
        if layout is not None and layout.is_frame(start[0]):   # a function or block: no scan needed
            _, line, column = layout.span_from(start[0])
            if line < len(self.lines):
                end = self.offset((line, column + 1))
                more = _OUTPUTS.match(text, end) if outputs else None
                return (line, column), self.position(more.end() if more else end)
        depth, opened = 0, False
        for m in _SCAN.finditer(text, self.offset(start)):
            c = m.group()
            if c in _OPEN:
                opened = opened or (c == "{" and depth == 0)
                depth += 1
            elif c in _CLOSE:
                depth -= 1
                if opened and depth == 0:
                    end = m.end()
                    more = _OUTPUTS.match(text, end) if outputs else None
                    return self.position(m.start()), self.position(more.end() if more else end)
        end = self.position(len(text))
        return end, end

    def trimmed(self, pos: tuple) -> tuple:
        """The place just past the last character before `pos` that is not white space."""
        offset = self.offset(pos)
        while offset > 0 and self.text[offset - 1].isspace():
            offset -= 1
        return self.position(offset)
