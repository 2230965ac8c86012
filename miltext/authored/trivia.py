"""Comments and blank lines of an author's text, attached to the object model by one pass after
parsing, the way gofmt's CommentMap and ruff's formatter do it; the printer asks for them as it
writes each construct (text.dialects.PrintOptions.notes).

Each function head and end, block head and end, and op is an anchor: from where the parser
placed it to the last code before the next anchor. A comment is
- inside an op's parentheses or a function's inputs: written after the argument or input it
  followed (op_layout.one_per_line); inside an anchor elsewhere: on its own line before it;
- after code on its line: trailing, written after the anchor that ends there;
- on a line of its own: leading, written before the next anchor; before a `}`, it stays
  inside the braces; after the last function, at the end of the text.
A blank line before an anchor or an own-line comment is kept (one, however many there were),
except right after an opening `{` and right before a `}`."""
from __future__ import annotations

import bisect
import re

from ..ir import Block
from ..text.mil.printer import INDENT
from .op_layout import one_per_line, op_text
from .scan import Scan
from .section_notes import SectionNotes

_B64 = re.compile(r'(?<![A-Za-z0-9_.])b64"')


class Anchor:
    __slots__ = ("start", "end", "leading", "inner", "trailing", "blank_before")

    def __init__(self, start: int):
        self.start, self.end = start, start
        self.leading, self.inner, self.trailing = [], [], None
        self.blank_before = False


class Inside:
    """The comments written inside an op's parentheses: those before its first argument, and
    by key those after each argument."""
    __slots__ = ("before", "after")

    def __init__(self):
        self.before, self.after = [], {}


class Trivia:
    """The comments and blank lines of `text`, the source of `program`, by anchor."""

    def __init__(self, program, text: str, raw: bool = False, comments: bool = True, section=None):
        self.scan = scan = Scan(text, raw)
        self.anchors: dict = {}  # (kind, id(node)) -> Anchor
        self.ops: dict = {}      # id(op) -> (numbers, wraps): how its literals are written
        self.inside: dict = {}   # id(op or function) -> Inside: comments in its parentheses
        self._written: list = []  # (op, its anchor)
        self._at: dict = {}       # op.loc -> anchor: for the consts `infer` makes of an op's literals
        self._led: set = set()    # id of each anchor whose leading comments are written
        self.preamble = Anchor(0)  # the model section and program header, when there are any
        self.tail: list = []     # comments after the last anchor
        self._opened = True      # nothing written yet since the last `{` (or the start)
        self._place(program)
        order = sorted(self.anchors.values(), key=lambda a: a.start)
        first = scan.code_after(0)
        if first is not None and (not order or first < order[0].start):
            self.preamble.start = first
            order.insert(0, self.preamble)
        for a, b in zip(order, order[1:]):
            a.end = scan.code_end(b.start, a.start)
        if order:
            order[-1].end = scan.code_end(len(text), order[-1].start)
        self._literal_styles()
        if comments:
            self._attach(order)
            self._inside_calls()
        self._blank_lines(order)
        # The comments inside the model section and the program header: beside their items.
        p = self.preamble
        inside = p.inner + ([p.trailing] if p.trailing is not None else [])
        p.inner, p.trailing = [], None
        self.section = SectionNotes(scan, section, inside, p.end)

    # ---- the pass -----------------------------------------------------------------------------
    def _place(self, program) -> None:
        self._functions = list(program.functions.values())
        for fn in self._functions:
            self._braced("function", fn, list(fn.blocks.values()))

    def _braced(self, kind: str, node, inside: list) -> int | None:
        """Anchors for a function or block, its head and its `}`, and for what is inside;
        where its `}` ends (None when it cannot be found)."""
        if node.loc is None:
            return None
        scan = self.scan
        start = scan.offset(node.loc)
        self.anchors[kind, id(node)] = Anchor(start)
        opening = scan.opening(start)
        if opening is None:
            return None
        resume = opening + 1  # where the search for the `}` starts: after what is inside
        for item in inside:
            if kind == "function":
                resume = self._braced("block", item, item.operations) or resume
                continue
            if item.loc is not None:
                a = self.anchors["op", id(item)] = Anchor(scan.offset(item.loc))
                self._written.append((item, a))
                self._at.setdefault(item.loc, a)
                resume = a.start
            for nested in item.blocks:
                resume = self._braced("block", nested, nested.operations) or resume
        close = scan.closing(resume)
        if close is None:
            return None
        self.anchors[kind + " end", id(node)] = Anchor(close)
        return close + 1

    def _literal_styles(self) -> None:
        """An op keeps b64 past the canonical limit only where the author wrote b64; it breaks
        long literals into rows when the author laid it over several lines."""
        text = self.scan.text
        for op, a in self._written:
            source = text[a.start:a.end]
            self.ops[id(op)] = (_B64.search(source) is None, "\n" in source)

    def _attach(self, order: list) -> None:
        starts = [a.start for a in order]
        for c in self.scan.comments:
            i = bisect.bisect_right(starts, c.start) - 1
            if i >= 0 and c.start < order[i].end:
                order[i].inner.append(c)
            elif not c.own_line and i >= 0 and order[i].trailing is None:
                order[i].trailing = c
            elif i + 1 < len(order):
                order[i + 1].leading.append(c)
            else:
                self.tail.append(c)

    def _inside_calls(self) -> None:
        """Comments inside an op's parentheses stay there, each after the argument it followed
        (or before the first); the others inside an op are written above it."""
        for op, a in self._written:
            if not a.inner:
                continue
            found = self.scan.call_keys(a.start, a.end, bool(op.outputs))
            known = set(op.inputs) | set(op.attributes)
            if found is None or not found[1] or not all(key in known for _, key in found[1]):
                continue
            keys = found[1]
            inside = self.inside[id(op)] = Inside()
            starts = [at for at, _ in keys]
            for c in a.inner:
                i = bisect.bisect_right(starts, c.start) - 1
                if i < 0:
                    inside.before.append(c)
                else:
                    inside.after.setdefault(keys[i][1], []).append(c)
            a.inner = []
        for fn in self._functions:
            a = self.anchors.get(("function", id(fn)))
            if a is None or not a.inner or not all(v.loc for v in fn.inputs):
                continue
            starts = [self.scan.offset(v.loc) for v in fn.inputs]
            if not starts:
                continue
            inside = self.inside[id(fn)] = Inside()
            for c in a.inner:
                i = bisect.bisect_right(starts, c.start) - 1
                if i < 0:
                    inside.before.append(c)
                else:
                    inside.after.setdefault(i, []).append(c)
            a.inner = []

    def _blank_lines(self, order: list) -> None:
        items = sorted([*order, *(c for a in order for c in a.leading), *self.tail], key=lambda x: x.start)
        for before, item in zip(items, items[1:]):
            end = before.end
            if isinstance(before, Anchor) and before.trailing is not None:
                end = before.trailing.end
            item.blank_before = self.scan.blank_between(end, item.start)

    # ---- what the printer asks ----------------------------------------------------------------
    def opening(self, node, indent: str, lines: list, head: str) -> str:
        """Before a function's or block's head: its comments; the head with its trailing one."""
        kind = _kind(node)
        a = self.anchors.get((kind, id(node)))
        if a is None:
            return head
        if kind == "function":
            self._opened = True  # functions are a blank line apart anyway
        self._lead(a, indent, lines)
        self._opened = True
        return head + _trailing(a)

    def inputs(self, fn, decls: list, indent: str) -> str:
        """A function's inputs, one per line, each with the comments written after it."""
        inside = self.inside.get(id(fn))
        if inside is None:
            return (",\n" + indent).join(decls)
        return one_per_line(decls, [inside.after.get(i) for i in range(len(decls))], inside.before, indent)

    def op_line(self, op, indent: str, lines: list, printer) -> str:
        """The op's line (or lines), as `printer` (a text.mil.printer.MilPrinter) writes it."""
        a = self.anchors.get(("op", id(op)))
        if a is None:  # a const that `infer` made of the literals of the op written here
            made_of = self._at.get(op.loc)
            if made_of is not None:
                self._lead(made_of, indent, lines)
            self._opened = False
            return indent + op_text(printer, op, len(indent), True, False)
        self._lead(a, indent, lines)
        self._opened = False
        numbers, wraps = self.ops[id(op)]
        return indent + op_text(printer, op, len(indent), numbers, wraps, self.inside.get(id(op))) + _trailing(a)

    def closing(self, node, indent: str, lines: list, end: str) -> str:
        """Before a `}`: the comments written last inside the braces; the `}` line with its
        trailing comment."""
        a = self.anchors.get((_kind(node) + " end", id(node)))
        if a is None:
            return end
        self._comment_lines(a, indent + INDENT, lines, blank_after=False)
        return end + _trailing(a)

    def head_lines(self) -> list:
        """The comments before the model section and header, written above them."""
        lines = []
        self._opened = True
        self._lead(self.preamble, "", lines)
        return lines

    def header_trailing(self) -> str:
        """The comment written after the `program(...)` header, on its line."""
        return self.section.header_trailing()

    def tail_lines(self) -> list:
        """The lines after the last function: its comments, a blank line where there was one."""
        out = []
        for c in self.tail:
            if c.blank_before:
                out.append("")
            out.append(c.text)
        return out

    def _lead(self, a: Anchor, indent: str, lines: list) -> None:
        if id(a) in self._led:
            return
        self._led.add(id(a))
        self._comment_lines(a, indent, lines, blank_after=True)

    def _comment_lines(self, a: Anchor, indent: str, lines: list, blank_after: bool) -> None:
        """The comments before an anchor, with the blank lines between them (and, with
        `blank_after`, before the anchor): none right after a `{`."""
        for c in a.leading:
            if c.blank_before and not self._opened:
                lines.append("")
            lines.append(indent + c.text)
            self._opened = False
        if blank_after and a.blank_before and not self._opened:
            lines.append("")
        for c in a.inner:
            lines.append(indent + c.text)
        self._opened = False


def _kind(node) -> str:
    return "block" if isinstance(node, Block) else "function"


def _trailing(a: Anchor) -> str:
    return "" if a.trailing is None else "  " + a.trailing.text
