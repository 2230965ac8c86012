"""How an author's op writes its literals: as numbers (never turned into b64"..."), and, when a
nested list would run past WIDTH, one row per line the way numpy prints arrays, each row under
the one before, one column in from the opening bracket:

    %w = const(val=[[0.1, 0.2, 0.3],
                    [0.4, 0.5, 0.6]])

A row too long for the width breaks between its numbers, the same way, and the arguments after
a broken literal start lines of their own, under the first. An op with comments inside its
parentheses is written one argument per line, each comment after the argument it followed.
Everything else in an op stays on its one line."""
from __future__ import annotations

import re

from ..text import lexemes, lexicon
from ..text.mil import printer

WIDTH = 100
_MARK = "\x00"  # around a literal's index while the op's line is built; strings escape it


class Literals:
    """The printer's policy for one op (MilPrinter.literals): `numbers` keeps numbers past the
    canonical limit; `wraps` lets a literal that runs past WIDTH break into rows (an op the
    author laid over several lines, or a literal canonical text would write as b64)."""

    def __init__(self, numbers: bool, wraps: bool):
        self.numbers, self.wraps = numbers, wraps
        self.found: list = []

    def literal(self, scalars: list, shape: tuple) -> str:
        if not self.wraps and len(scalars) <= printer.INLINE_LIMIT:
            return lexemes.nested(scalars, shape)  # one line, whatever its width
        self.found.append((scalars, shape))
        return f"{_MARK}{len(self.found) - 1}{_MARK}"


def op_text(writer, op, column: int, numbers: bool, wraps: bool, inside=None) -> str:
    """The op as `writer` (the printer.MilPrinter of its program) writes it, its line starting at `column`, with its literals laid
    out. Once one literal breaks into rows, the others may too, and each argument after a
    broken literal starts a line of its own, under the first argument: so that the op comes
    out the same when formatted again. `inside`, the comments written inside its parentheses
    (trivia.Inside), puts one argument on each line, each comment after the argument it
    followed."""
    policy = Literals(numbers, wraps)
    head, keys, args, tail = writer.authored_op_parts(op, policy)
    call = column + len(head)
    if inside is None:
        text, broken = _lay_out(head + ", ".join(args) + tail, policy.found, column, call)
    else:  # each argument from the call's column on; the comments added after, as they are
        laid = [_lay_out(t, policy.found, call, call) for t in args]
        text = head + one_per_line([t for t, _ in laid], [inside.after.get(k) for k in keys],
                                   inside.before, " " * call)
        tail, tail_broken = _lay_out(tail, policy.found, _column_after(text, column), call)
        broken = tail_broken or any(b for _, b in laid)
        text += tail
    if broken and not wraps:
        return op_text(writer, op, column, numbers, True, inside)
    return text


def one_per_line(items: list, after: list, before: list, indent: str) -> str:
    """Items one per line (after the first, at `indent`), with the comments written before the
    first and after each; when the last has comments, a line break to close the bracket on."""
    out = [_comments(before, indent), "\n" + indent] if before else []
    for i, text in enumerate(items):
        last = i == len(items) - 1
        out.append(text if last else text + ",")
        if after[i]:
            out.append(_comments(after[i], indent))
        if after[i] or not last:
            out.append("\n" + indent)
    return "".join(out)


def _comments(comments: list, indent: str) -> str:
    """Comments after some code: the first on its line if it was written so, the rest under."""
    return "".join(("  " if n == 0 and not c.own_line else "\n" + indent) + c.text
                   for n, c in enumerate(comments))


_NEXT_ARGUMENT = re.compile(rf'[)\]]*, (?=(?:{lexicon.NAME}|{lexicon.STRING})=)')


def _lay_out(text: str, found: list, column: int, call: int) -> tuple[str, bool]:
    """`text`, starting at `column`, with each literal's mark replaced by the literal laid out;
    whether one broke into rows."""
    if _MARK not in text:
        return text, False
    out, broken, after_break = [], False, False
    for i, part in enumerate(text.split(_MARK)):
        if i % 2:
            scalars, shape = found[int(part)]
            part = rows(scalars, shape, column)
            after_break = "\n" in part
            broken = broken or after_break
        elif after_break:
            m = _NEXT_ARGUMENT.match(part)
            if m:
                part = part[:m.end() - 1].rstrip() + "\n" + " " * call + part[m.end():]
            after_break = False
        out.append(part)
        column = _column_after(part, column)
    return "".join(out), broken


def _column_after(text: str, column: int) -> int:
    """The column after `text`, written from `column` on."""
    return len(text) - text.rfind("\n") - 1 if "\n" in text else column + len(text)


def rows(scalars: list, shape: tuple, column: int) -> str:
    """The literal starting at `column`: on one line when it fits in WIDTH, else by rows."""
    one = lexemes.nested(scalars, shape)
    if column + len(one) <= WIDTH or len(scalars) <= 1:
        return one
    indent = "\n" + " " * (column + 1)
    if len(shape) == 1:
        lines, line, used = [], [], 0
        room = WIDTH - column - 2  # after the bracket, before the comma or bracket that ends it
        for s in scalars:
            if line and used + 2 + len(s) > room:
                lines.append(", ".join(line))
                line = []
            used = used + 2 + len(s) if line else len(s)
            line.append(s)
        lines.append(", ".join(line))
        return "[" + ("," + indent).join(lines) + "]"
    step = len(scalars) // shape[0] if shape[0] else 0
    parts = [rows(scalars[i * step:(i + 1) * step], shape[1:], column + 1) for i in range(shape[0])]
    return "[" + ("," + indent).join(parts) + "]"
