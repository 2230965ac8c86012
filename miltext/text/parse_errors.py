"""Parse errors as a person can act on them, for both text dialects (mil/parser.py, modelmil/parser.py).

A parser raises LocatedError for the first mistake it meets; collect_errors runs it again
without the lines at fault to find the mistakes that are independent of it, and raises them
all as one ParseError. These rules keep that list to one error per mistake, where it is:

- a `(`, `[` or `{` that is never closed is told once, at the delimiter: the parser only
  notices it lines later, and each following line would look wrong;
- the end of the text is where a truncated text is wrong, and nothing follows it to look at;
- a line that stops short (`%y: (2, fp32) =`, model.mil's op without its `;`) is told at its
  end, not at the start of the next line where the parser notices;
- a statement at fault goes away whole (all its lines), so the search goes on at the next op
  line; it stops at structure it cannot take out (a function or block header, braces that do
  not pair), where what follows would only echo the first error.
"""
from __future__ import annotations

import re

from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..errors import ParseError
from .lexicon import scanner
from .messages import describe_token

MAX_ERRORS = 20

_CLOSER_OF = {"(": ")", "[": "]", "{": "}"}
_OPENER_OF = {v: k for k, v in _CLOSER_OF.items()}


class LocatedError(Exception):
    """The first error of one parse: where, what, whether it is the end of the text, and whether
    it is a token out of place (which a delimiter never closed before it may explain)."""

    def __init__(self, line: int, column: int, message: str, at_end: bool = False, misplaced: bool = False,
                 last: bool = False):
        super().__init__(message)
        self.line, self.column, self.message = line, column, message
        self.at_end, self.misplaced = at_end, misplaced
        self.last = last  # nothing to look at further: structure follows that reading cannot skip



class BuildFailure(Exception):
    """An error found while building the object model from a parse (in either dialect), with
    its place (line, column) when known."""

    def __init__(self, message: str, pos=None):
        super().__init__(message)
        self.message, self.pos = message, pos


def place_of(tok) -> tuple | None:
    """(line, column) of a Lark token, None for a value that is not one."""
    line = getattr(tok, "line", None)
    return (line, tok.column) if line is not None else None


def collect_errors(text: str, filename: str | None, parse_once, raw: bool = False):
    """What `parse_once(text)` returns; when it raises LocatedError, parse again without each
    statement at fault to find further independent errors, then raise them all as one
    ParseError. `raw` says the text's strings have no escapes (coremltools' print)."""
    errors: list = []
    attempt = text
    braces_balance = None  # computed at the first error: whether reading can go on after one
    for _ in range(MAX_ERRORS):
        try:
            result = parse_once(attempt)
        except LocatedError as e:
            if e.at_end and errors and _end_of(attempt) != _end_of(text):
                break  # the end of what is left once the last lines went: the text's end is not there
            line, column, message, lines = _explained(e, attempt, raw)
            if any((line, column) == found[:2] for found in errors):
                break
            errors.append((line, column, message))
            if braces_balance is None:
                braces_balance = _braces_balance(text, raw)
            if e.at_end or not braces_balance:
                break  # without an op line, braces that do not pair stay so: what follows is their echo
            attempt = _without_lines(attempt, lines)
            if attempt is None:
                break
            continue
        if not errors:
            return result
        break
    errors.sort()
    line, column, message = errors[0]
    raise ParseError(message, line, column, filename, source_line(text, line), errors, text)


def _delimiters(text: str, raw: bool, end: int | None = None):
    """(offset, char) of each bracket and brace of the text (up to `end`), outside strings and
    comments."""
    for m in scanner(raw).finditer(text, 0, len(text) if end is None else end):
        if m.lastgroup == "open" or m.lastgroup == "close":
            yield m.start(), m.group()


def _brackets_open(depth: int, char: str) -> int:
    """The `(` and `[` open after `char`, `depth` of them before: a `{` or `}` is structure, and
    what was open before it does not run past it."""
    if char in "([":
        return depth + 1
    if char in ")]":
        return max(0, depth - 1)
    return 0


def _braces(text: str, raw: bool) -> tuple[bool, int | None]:
    """Whether a `}` closes no `{`, and the offset of the outermost `{` left open (or None)."""
    depth, outermost, stray = 0, None, False
    for offset, char in _delimiters(text, raw):
        if char == "{":
            outermost = offset if depth == 0 else outermost
            depth += 1
        elif char == "}":
            stray = stray or depth == 0
            depth = max(0, depth - 1)
    return stray, outermost if depth else None


def _braces_balance(text: str, raw: bool) -> bool:
    """Whether every `{` of the text pairs with a `}`."""
    stray, left_open = _braces(text, raw)
    return not stray and left_open is None


def _explained(e: LocatedError, text: str, raw: bool) -> tuple[int, int, str, range]:
    """(line, column, message) of an error, told at the delimiter that caused it when one is
    never closed, and the lines to take out to look further."""
    if e.misplaced:
        opener = _unclosed_before(text, e.line, e.column, raw)
        if opener is not None:
            line, column, char = opener
            return line, column, f"'{char}' opened here is never closed", range(line, max(line, e.line - 1) + 1)
    return e.line, e.column, e.message, range(0) if e.last else _statement_lines(text, e.line, raw)


def _statement_lines(text: str, line: int, raw: bool) -> range:
    """The lines of the statement that line `line` is part of: lines that start inside a `(` or
    `[` opened on an earlier line belong to that line's statement (inputs over several lines,
    a wrapped literal)."""
    lines = text.split("\n")
    depth_at = [0] * (len(lines) + 2)  # the ( and [ open when each line starts
    depth, number = 0, 1  # number: the last line whose depth is in depth_at
    starts = _line_starts(text)
    for offset, char in _delimiters(text, raw):
        while number < len(starts) and starts[number] <= offset:
            number += 1
            depth_at[number] = depth
        depth = _brackets_open(depth, char)
    while number < len(starts):
        number += 1
        depth_at[number] = depth
    first = line
    while first > 1 and depth_at[first] > 0:
        first -= 1
    last = line
    while last < len(lines) and depth_at[last + 1] > 0:
        last += 1
    return range(first, last + 1)


def _line_starts(text: str) -> list:
    """The offset where each line starts; [0] is line 1."""
    return [0] + [m.end() for m in re.finditer("\n", text)]


def _unclosed_before(text: str, line: int, column: int, raw: bool):
    """(line, column, char) of the innermost delimiter that is open at the place of an error and
    never closed, or None. A `{` counts only when a closer of another kind shows it unclosed:
    at the end of the text, an open `{` is a truncated text, which its end tells better."""
    at = _offset(text, line, column)
    stack: list = []      # (offset, char) of the open delimiters
    open_count = dict.fromkeys(_CLOSER_OF, 0)
    unclosed: list = []   # (offset, char, offset where it shows unclosed)
    for here, char in _delimiters(text, raw):
        if char in _CLOSER_OF:
            stack.append((here, char))
            open_count[char] += 1
            continue
        wanted = _OPENER_OF[char]
        if open_count[wanted]:  # it closes the innermost open one of its kind; any inside stay open
            while stack[-1][1] != wanted:
                offset, inner = stack.pop()
                open_count[inner] -= 1
                unclosed.append((offset, inner, here))
            stack.pop()
            open_count[wanted] -= 1
        if here > at and not stack:
            break
    unclosed.extend((offset, char, len(text)) for offset, char in stack if char != "{")
    found = [(offset, char) for offset, char, shown in unclosed if offset < at <= shown]
    if not found:
        return None
    offset, char = max(found)
    before = text.rfind("\n", 0, offset)
    return text.count("\n", 0, offset) + 1, offset - before, char


def _offset(text: str, line: int, column: int) -> int:
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return len(text)
    return start + column - 1


def _without_lines(text: str, lines: range) -> str | None:
    """The text with lines `lines` (1-based) emptied, so parsing can look for further errors;
    None when one of them holds structure (a function, a block or its end) that cannot go."""
    parts = text.split("\n")
    if not lines or not (0 < lines.start and lines.stop - 1 <= len(parts)):
        return None
    for n in lines:
        content = parts[n - 1].strip()
        if "{" in content or "}" in content or content.startswith("->") or _HEADER.match(parts[n - 1]):
            return None
    if not any(parts[n - 1].strip() for n in lines):
        return None
    for n in lines:
        parts[n - 1] = ""
    return "\n".join(parts)


# The first line of a function (main[CoreML7](...), model.mil's func), of the program's or the
# model's header: what starts at the left margin with a name and a bracket (ops are indented).
_HEADER = re.compile(r'[A-Za-z_"][\w."]*[ \t]*[\[(]|[ \t]*func[ \t]')


def source_line(text: str, line: int) -> str | None:
    """Line `line` (1-based) as the parser counts lines: at \\n only."""
    lines = text.split("\n")
    return lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else None


def _end_of(text: str) -> tuple[int, int]:
    """Just past the last character that is not white space: where the text stops short."""
    lines = text.rstrip().split("\n")
    return len(lines), len(lines[-1]) + 1


def _left_open(text: str, raw: bool) -> str:
    """When a text ends closing a block (`}`, not cut short) and a `{` is still open, which one:
    the one whose `}` was left out, as far as the braces tell."""
    if not text.rstrip().endswith("}"):
        return ""
    offset = _braces(text, raw)[1]
    if offset is None:
        return ""
    return f" (the '{{' at {text.count(chr(10), 0, offset) + 1}:{offset - text.rfind(chr(10), 0, offset)} is never closed)"


# Terminals that start a statement: a parser that expects one of them is not in a line's middle.
# A `}` ends a block too, unless a ',' may come instead (then it ends a dict).
_STATEMENT_STARTERS = frozenset(["SIMPLE_OPS", "VAR", "FUNC", "BLOCK", "$END"])


def _header_waits(expected) -> bool:
    """Whether the parser waits for the `{` of a function's or block's header: what follows is
    the inside of a block that lost its opening, which reading cannot go on in."""
    return "LBRACE" in expected and expected <= {"LBRACE", "LSQB", "_SCOPES"}


def _line_ended_early(e: UnexpectedToken, text: str, raw: bool) -> bool:
    """Whether the token out of place starts a line while the parser is still in the middle of
    the statement of the line before, outside any bracket (inside one, statements may go on
    over several lines)."""
    start = e.token.start_pos
    if start is None or e.expected & _STATEMENT_STARTERS or "RBRACE" in e.expected and "COMMA" not in e.expected:
        return False
    line_start = text.rfind("\n", 0, start) + 1
    before = text[:line_start].rstrip()
    if text[line_start:start].strip() or not before or before[-1] in "{}":  # a brace ends a line whole
        return False
    depth = 0
    for _, char in _delimiters(text, raw, start):
        depth = _brackets_open(depth, char)
    return depth == 0


def _cut_short(token, text: str) -> bool:
    """Whether the token out of place is the text's last and a word or number that may have
    been cut (tensor<s, fp3, 12, -0x1.4p-): the text stops short there rather than holding a
    mistake."""
    start = token.start_pos
    rest = "" if start is None else text[start:].rstrip()
    # a number cut inside lexes as pieces (-0x1.4p: -0, x1, ...): the first piece out of place
    return bool(rest) and all(c.isalnum() or c in "_.+-" for c in rest) and _stops_in_a_word(text, start + len(rest))


def _stops_in_a_word(text: str, end: int) -> bool:
    """Whether the text ends at `end` in the middle of a word or number (its last character
    one that a name or a number goes on after)."""
    return 0 < end <= len(text) and not text[end:].strip() and (text[end - 1].isalnum() or text[end - 1] in "_.+-")


def mil_hint(text: str, pos: int, expected: str) -> str:
    """The right spelling of a slip a newcomer makes in miltext's dialect, to follow the message
    of an error at offset `pos` (where the parser `expected` what the words say), or ""."""
    at = text[pos:pos + 2]
    if at == "//":
        return "; a comment starts with '#'"
    if at.startswith("%") and expected.startswith("expected a name"):
        return ("; a function's ops go in a block: `block0() {` before them and `} -> (%outputs)` after "
                "(docs/syntax.md)")
    return ""


def lark_error(e: UnexpectedInput, text: str, describe, raw: bool = False, hint=None) -> LocatedError:
    """A Lark error in words; `describe` words the set of terminals the parser expected; `raw`
    says the text's strings have no escapes (coremltools' print); `hint(text, offset, words)`
    adds the right spelling of a known slip (mil_hint)."""
    if isinstance(e, UnexpectedToken) and e.token.type == "$END" or isinstance(e, UnexpectedEOF):
        return LocatedError(*_end_of(text), f"unexpected end of text: {describe(e.expected)}{_left_open(text, raw)}",
                            at_end=True)
    if isinstance(e, UnexpectedToken) and _cut_short(e.token, text):
        return LocatedError(*_end_of(text), f"unexpected end of text: {describe(e.expected)}", at_end=True)
    if isinstance(e, UnexpectedToken) and _line_ended_early(e, text, raw):
        # the line before stops short (`%y: (2, fp32) =`, an op without its ';'): say so at its end
        start = e.token.start_pos
        end = len(text[:start].rstrip())
        what = "missing ';' at the end of the op" if "SEMICOLON" in e.expected else "the line ends too soon"
        line_end = text.find("\n", start)
        next_line = text[start:] if line_end < 0 else text[start:line_end]
        return LocatedError(text.count("\n", 0, end) + 1, end - text.rfind("\n", 0, end),
                            f"{what}: {describe(e.expected)}",
                            last="{" in next_line or "}" in next_line or _header_waits(e.expected))
    if isinstance(e, UnexpectedToken):
        words = describe(e.expected)
        words += hint(text, e.token.start_pos, words) if hint and e.token.start_pos is not None else ""
        return LocatedError(e.line, e.column, f"unexpected {describe_token(e.token)}: {words}",
                            misplaced=True, last=_header_waits(e.expected))
    if isinstance(e, UnexpectedCharacters):
        char = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        if char in "\"'":
            if "\n" not in text[e.pos_in_stream:].rstrip():  # the string runs to the end: a truncated text
                return LocatedError(*_end_of(text), f"unexpected end of text: the string opened at "
                                    f"{e.line}:{e.column} is never closed", at_end=True)
            return LocatedError(e.line, e.column, "unterminated string: a string ends with its quote on the same line")
        words = describe(e.allowed)
        if char in "+-." and _stops_in_a_word(text, e.pos_in_stream + 1):  # a number cut after its sign
            return LocatedError(*_end_of(text), f"unexpected end of text: {words}", at_end=True)
        words += hint(text, e.pos_in_stream, words) if hint else ""
        return LocatedError(e.line, e.column, f"unexpected character {char!r}: {words}")
    return LocatedError(getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1, "the text cannot be read here")
