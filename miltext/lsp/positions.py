"""Places as the client counts them. LSP ends a line at \\n, \\r\\n or \\r only (not at the other
breaks str.splitlines knows: U+2028, U+0085, form feed, ...) and counts a column in the units
the client negotiated (UTF-16 unless it asked otherwise). The server's own places (document_text.Lines)
are the parser's, whose lines end at \\n only: the two differ only where a text holds a \\r that
no \\n follows, and in the units of a column.
"""
from __future__ import annotations

import re
from array import array
from bisect import bisect_right

_BREAK = re.compile(r"\r\n?|\n")
_LONE_CR = re.compile(r"\r(?!\n)")


def line_starts(text: str) -> array:
    """The offset of each line of `text` as LSP counts them."""
    starts = array("q", [0])
    starts.extend(m.end() for m in _BREAK.finditer(text))
    return starts


def split_lines(text: str) -> list[str]:
    """The lines of `text` as LSP counts them, each with its line break."""
    starts = line_starts(text)
    return [text[a:b] for a, b in zip(starts, starts[1:])] + ([text[starts[-1]:]] if starts[-1] < len(text) else [])


def same_lines(text: str) -> bool:
    """Whether LSP's lines of `text` are the parser's (no \\r stands alone)."""
    return "\r" not in text or _LONE_CR.search(text) is None


def _content_end(text: str, starts, line: int) -> int:
    """Where line `line`'s text ends (before its line break)."""
    if line + 1 >= len(starts):
        return len(text)
    end = starts[line + 1]
    return end - 2 if text.startswith("\r\n", end - 2) else end - 1


def offset_of(text: str, starts, line: int, character: int, units) -> int:
    """The offset of the client's place (line, character in `units`, a pygls unit counter) in
    `text` whose LSP line starts are `starts`: a place past the end of its line is the end of
    the line, one past the last line the end of the text."""
    if line >= len(starts):
        return len(text)
    start, end = starts[line], _content_end(text, starts, line)
    content = text[start:end]
    if content.isascii():
        return start + min(character, len(content))
    count = 0
    for i, c in enumerate(content):
        if count >= character:
            return start + i
        count += units.code_units_for_char(c)
    return end


def place_of(text: str, starts, offset: int, units) -> tuple[int, int]:
    """The client's (line, character) of an offset in `text` (a place inside a line break is the
    end of its line)."""
    line = bisect_right(starts, offset) - 1
    start = starts[line]
    part = text[start:min(offset, _content_end(text, starts, line))]
    return line, len(part) if part.isascii() else units.num_units(part)
