"""Exact places in the source text for what the object model only places roughly.

The parser keeps the place of each op (its first output), block (its label) and var. A
diagnostic about one input or one block output is clearer with the caret under that input, so
when the source text is at hand these helpers look for it on the op's line, or on the line
that closes the block; when they do not find it (an op spread over lines, an unusual layout),
the rough place stands.
"""
from __future__ import annotations

import re
from array import array

from ..text import lexemes
from ..text.lexicon import VAR_CHAR

# not after a %name's character, a quote or a %: the start of a name, not its middle
_NAME_START = rf'(?<!{VAR_CHAR}|["%])'


class Locator:
    def __init__(self, text: str | None):
        self.text = text
        self._starts = None  # where each line starts, found when first asked: most checks find nothing

    def _line_starts(self) -> array:
        if self._starts is None:
            starts, find = array("q", [0]), self.text.find
            at = find("\n")
            while at >= 0:
                starts.append(at + 1)
                at = find("\n", at + 1)
            self._starts = starts
        return self._starts

    def _line(self, number: int) -> str | None:
        if self.text is None:
            return None
        starts = self._line_starts()
        if not 0 < number <= len(starts):
            return None
        end = starts[number] - 1 if number < len(starts) else len(self.text)
        return self.text[starts[number - 1]:end]

    def key(self, loc: tuple | None, key: str) -> tuple | None:
        """Where `key=` (an input or an attribute) is written on the line of the op at `loc`."""
        found = self._key_match(loc, key)
        return (loc[0], found.start() + 1) if found else loc

    def op_type(self, loc: tuple | None, op_type: str) -> tuple | None:
        """Where the op's type is written, `relu(`, on the line of the op at `loc`."""
        line = self._line(loc[0]) if loc is not None else None
        if line is None:
            return loc
        spelled = "|".join(re.escape(s) for s in {op_type, lexemes.name(op_type)})
        found = re.compile(rf"{_NAME_START}(?:{spelled})\s*\(").search(line, loc[1] - 1)
        return (loc[0], found.start() + 1) if found else loc

    def reference(self, loc: tuple | None, name: str, key: str | None = None) -> tuple | None:
        """Where `%name` is written after `key=` on the line of the op at `loc`."""
        if loc is None:
            return None
        line = self._line(loc[0])
        if line is None:
            return loc
        start = loc[1] - 1
        if key is not None:
            found = self._key_match(loc, key)
            if not found:
                return loc
            start = found.end()
        column = _find_var(line, name, start)
        return (loc[0], column) if column else loc

    def block_output(self, block_loc: tuple | None, name: str | None = None) -> tuple | None:
        """Where `%name` is written in the `} -> (...)` that closes the block whose label is at
        `block_loc` (the first line after it with `}` in the label's column); without a name,
        where that `}` is."""
        if block_loc is None or self.text is None:
            return block_loc
        number, column = block_loc
        for i in range(number, len(self._line_starts()) + 1):
            line = self._line(i)
            if i == number:
                arrow = re.compile(r"\}\s*->").search(line, column - 1)
                if arrow is None:
                    continue
            elif line[:column - 1].strip() == "" and line[column - 1:column] == "}":
                arrow = re.compile(r"->").search(line, column - 1)
                if arrow is None:
                    return block_loc
            else:
                continue
            found = _find_var(line, name, arrow.end()) if name is not None else None
            return (i, found) if found else (i, column if i != number else arrow.start() + 1)
        return block_loc

    def _key_match(self, loc, key):
        if loc is None:
            return None
        line = self._line(loc[0])
        if line is None:
            return None
        spelled = "|".join(re.escape(s) for s in {key, lexemes.name(key)})
        return re.compile(rf"{_NAME_START}(?:{spelled})\s*=").search(line, loc[1] - 1)


def _find_var(line: str, name: str, start: int) -> int | None:
    """1-based column of `%name` (bare, quoted or raw) in `line` from `start`, or None."""
    for spelled in {lexemes.var(name), "%" + name}:
        pattern = re.escape(spelled) + ("" if spelled.endswith('"') else f"(?!{VAR_CHAR})")
        found = re.compile(pattern).search(line, start)
        if found:
            return found.start() + 1
    return None
