"""The comments an author wrote inside a model section (and around the `program(...)` header),
placed back beside the items they were written beside when the section is printed canonically.

Each item of the section is an anchor, keyed as `section_lines` keys its printed text (the
printer may put the items in another order), from where it starts to the end of its code. A
comment inside an item is written above it; one after its code, on that line, trails it; one
on a line of its own after it leads the next item, the `}` that ends the section (or a function
description), or the program that follows it. So the comments keep their order where the
items keep theirs."""
from __future__ import annotations

import bisect

from ..model.section import INDENT, function_name, item_key
from ..text.section_syntax import Section


class SectionNotes:
    def __init__(self, scan, section: Section | None, comments: list, end: int):
        """`comments` are those between the section's first code and `end`, where the code
        before the program's first function ends."""
        self.above: dict = {}      # key -> the comments written on lines of their own above it
        self.trailing: dict = {}   # key -> the comment written after its text
        self.program: list = []    # comments written before the program's text
        anchors = sorted(self._anchors(scan, section, end))
        starts = [at for at, _ in anchors]
        ends = [scan.code_end(after, at) for at, after in zip(starts, starts[1:] + [end])]
        for c in comments:
            i = bisect.bisect_right(starts, c.start) - 1
            if i >= 0 and c.start < ends[i]:   # inside the item: above it
                self.above.setdefault(anchors[i][1], []).append(c)
            elif i >= 0 and not c.own_line and anchors[i][1] not in self.trailing:
                self.trailing[anchors[i][1]] = c
            elif i + 1 < len(anchors):
                self.above.setdefault(anchors[i + 1][1], []).append(c)
            else:
                self.program.append(c)

    def _anchors(self, scan, section, end: int):
        after = 0   # where the section ends
        start = scan.code_after(0)
        if section is not None and start is not None:   # a model section is the text's first code
            yield start, ("model",)
            after = yield from self._body(scan, section, start, None, ("end",))
        header = scan.code_after(after)
        if header is not None and header < end and scan.text.startswith("program", header):
            yield header, ("program",)

    def _body(self, scan, section: Section, start: int, function, end_key: tuple):
        """The anchors of a section's items and its `}`; where the section ends."""
        if section.body is None:   # `name(...)` alone: it ends at its `)`
            paren = scan.text.find("(", start)
            close = None if paren < 0 else scan.closing(paren + 1)
            return start if close is None else close + 1
        for item in section.body:
            loc = item.loc if not isinstance(item, Section) else item.call.loc
            if loc is None:
                continue
            at = scan.offset(loc)
            yield at, item_key(item, function)
            if isinstance(item, Section) and item.call.name == "function":
                yield from self._body(scan, item, at, function_name(item), ("function end", function_name(item)))
        opening = scan.opening(start)
        close = None if opening is None else scan.closing(opening + 1)
        if close is None:
            return start
        yield close, end_key
        return close + 1

    def section_text(self, lines: list) -> str:
        """The section's printed (key, text) pairs with the comments put back."""
        out = []
        for key, text in lines:
            indent = text[:len(text) - len(text.lstrip())]
            if key[0] in ("end", "function end"):
                indent += INDENT  # comments before a `}` stay inside its braces
            out += [indent + c.text for c in self.above.pop(key, [])]
            trailing = self.trailing.pop(key, None)
            out.append(text if trailing is None else text + "  " + trailing.text)
        return "\n".join(out) + "\n"

    def header_trailing(self) -> str:
        """The comment written after the `program(...)` header on its line, unless comments
        after it would then come before it (written above the program)."""
        c = self.trailing.get(("program",))
        if c is None or any(other.start > c.start for other in self._left()):
            return ""
        del self.trailing[("program",)]
        return "  " + c.text

    def _left(self) -> list:
        return [c for cs in self.above.values() for c in cs] + list(self.trailing.values()) + self.program

    def program_lines(self) -> list:
        """The comments written between the section and the program: those before the program
        and the header, and any the printed section had no place for (no comment is lost)."""
        return [c.text for c in sorted(self._left(), key=lambda c: c.start)]
