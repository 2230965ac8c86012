"""MIL text → object model: Lark's LALR parser running the transformer of builder.py, and
the errors it finds in a user's words (several per run).

Two lexer flavours share the grammar: miltext's own, where strings have backslash escapes, and
coremltools' print, whose strings and names are raw (`"say "hi""`, `%layer.0/relu:0`); `parse`
picks by the text's look, and hands Apple's model.mil dialect to modelmil_parser.
"""
from __future__ import annotations

import os
import re
import threading

from lark import Lark
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from ..bulk import bulk
from ..errors import ParseError
from ..ir import Program
from .builder import MAX_BLOCK_DEPTH, _Builder, _Failure
from .lexemes import LiteralError
from .messages import describe_expected, describe_token
from .modelmil_words import looks_like_modelmil

_GRAMMAR_DIRS = (os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "grammar"),
                 os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "grammar"))

# coremltools' print writes strings and names raw: a string ends at a quote that a comma or a
# closing bracket follows; a name runs up to the colon-space before its type.
_RAW_OVERRIDES = r"""
%override STRING: /"([^"]|"(?![,)\]]|\s*\)))*"(?=\s*[,)\]])|"[^"\n]*"/ | /'([^'\\\n]|\\.)*'/
%override VAR: /%([^\s,()\[\]=:]|:(?!\s))+/
%override ARG_REF: /[A-Za-z_][A-Za-z0-9_.]*[ \t]*=[ \t]*%([^\s,()\[\]=:]|:(?!\s))+/
"""


def grammar_text(name: str = "mil.lark") -> str:
    for folder in _GRAMMAR_DIRS:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise FileNotFoundError(f"grammar file {name} not found in {_GRAMMAR_DIRS}")


class _Tracker:
    """Lark post-lexer that, when asked, remembers the latest token, so that an error found
    while building the object model can point near its place. Off, it costs nothing: the
    parse runs again with it on only when such an error has no place of its own."""
    always_accept = ()

    def __init__(self):
        self.builder = None
        self.tracking = False

    def process(self, stream):
        return self._tracked(stream) if self.tracking else stream

    def _tracked(self, stream):
        builder = self.builder
        for tok in stream:
            builder.current = tok
            yield tok


class _Parser:
    def __init__(self, raw: bool):
        text = grammar_text() + (_RAW_OVERRIDES if raw else "")
        self.tracker = _Tracker()
        self.builder = _Builder(raw_strings=raw)
        self.tracker.builder = self.builder
        self.lark = Lark(text, parser="lalr", lexer="contextual", transformer=self.builder,
                         postlex=self.tracker, maybe_placeholders=True, cache=_cache_path("raw" if raw else "mil"))
        self.lock = threading.Lock()

    def parse(self, text: str):
        with self.lock:
            try:
                return self.lark.parse(text)
            except _Failure as e:
                if e.pos is not None:
                    raise
            except LiteralError:  # a literal refused where nothing knew its place
                pass
            finally:
                self.builder.type_depth.clear()
                self.builder.simple_types.clear()
            self.tracker.tracking = True
            try:
                return self.lark.parse(text)
            except LiteralError as e:
                current = self.builder.current
                raise _Failure(str(e), (current.line, current.column) if current is not None else None) from None
            finally:
                self.tracker.tracking = False
                self.builder.current = None
                self.builder.type_depth.clear()


def _cache_path(flavour: str):
    """Where Lark keeps the built tables of a grammar flavour, so a start-up does not rebuild them."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        os.makedirs(os.path.join(base, "miltext"), exist_ok=True)
    except OSError:
        return False
    import lark
    from .. import __version__
    return os.path.join(base, "miltext", f"grammar-{__version__}-lark{lark.__version__}-{flavour}.cache")


_PARSERS: dict = {}


def _parser(raw: bool) -> _Parser:
    p = _PARSERS.get(raw)
    if p is None:
        p = _PARSERS[raw] = _Parser(raw)
    return p


# The marks every coremltools print carries: a var type followed by (Tensor)/(Scalar)/...
_COREMLTOOLS_PRINT = re.compile(r"\)[*^]?\((Tensor|Scalar|List)\)")

MAX_ERRORS = 20


# A print's first var declaration (a function input or the first op's output) carries the mark.
_PRINT_MARK_WITHIN = 1 << 16
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def looks_like_coremltools_print(text: str) -> bool:
    """coremltools marks every var type with (Tensor), (Scalar) or (List); canonical text never
    does, outside its strings."""
    head = text[:_PRINT_MARK_WITHIN]
    found = _COREMLTOOLS_PRINT.search(head)
    return found is not None and _COREMLTOOLS_PRINT.search(_QUOTED.sub('""', head)) is not None


def parse(text: str, filename: str | None = None, *, with_model: bool = False):
    """Parse MIL text; raise ParseError (with every error found, up to MAX_ERRORS). With
    `with_model`, return (the model section or None, the program). Apple's model.mil dialect
    is recognized by its header and read by its own parser."""
    if looks_like_modelmil(text):
        from .modelmil_parser import parse as parse_modelmil
        program = parse_modelmil(text, filename)
        return (None, program) if with_model else program
    raw = looks_like_coremltools_print(text)
    program = collect_errors(text, filename, lambda attempt: _parse_once(attempt, raw))
    model, program = program if isinstance(program, tuple) else (None, program)
    _check_depth(program, filename, text)
    return (model, program) if with_model else program


def collect_errors(text: str, filename: str | None, parse_once):
    """What `parse_once(text)` returns; when it raises _LocatedError, parse again without each
    line at fault to find further independent errors, then raise them all as one ParseError."""
    errors = []
    attempt = text
    for _ in range(MAX_ERRORS):
        try:
            result = parse_once(attempt)
        except _LocatedError as e:
            if errors and (e.line, e.column) == errors[-1][:2]:
                break
            errors.append((e.line, e.column, e.message))
            attempt = _blank_line(attempt, e.line)
            if attempt is None:
                break
            continue
        if not errors:
            return result
        break
    errors.sort()
    line, column, message = errors[0]
    raise ParseError(message, line, column, filename, source_line(text, line), errors, text)


class _LocatedError(Exception):
    def __init__(self, line, column, message):
        self.line, self.column, self.message = line, column, message


def _parse_once(text: str, raw: bool) -> Program:
    parser = _parser(raw)
    try:
        with bulk():
            return parser.parse(text)
    except _Failure as e:
        line, column = e.pos or (1, 1)
        raise _LocatedError(line, column, e.message) from None
    except UnexpectedInput as e:
        raise _LocatedError(*_lark_error(e, text)) from None
    except RecursionError:
        raise _LocatedError(1, 1, "the text is nested too deeply to parse") from None


def source_line(text: str, line: int) -> str | None:
    """Line `line` (1-based) as the parser counts lines: at \\n only."""
    lines = text.split("\n")
    return lines[line - 1].rstrip("\r") if 0 < line <= len(lines) else None


def _end_of(text: str) -> tuple[int, int]:
    """Just past the last character that is not white space: where the text stops short."""
    lines = text.rstrip().split("\n")
    return len(lines), len(lines[-1]) + 1


def _lark_error(e: UnexpectedInput, text: str, describe=describe_expected) -> tuple[int, int, str]:
    """(line, column, message) of a Lark error; `describe` words the terminals it expected."""
    if isinstance(e, UnexpectedToken) and e.token.type == "$END":
        return (*_end_of(text), f"unexpected end of text: {describe(e.expected)}")
    if isinstance(e, UnexpectedToken):
        return e.line, e.column, f"unexpected {describe_token(e.token)}: {describe(e.expected)}"
    if isinstance(e, UnexpectedCharacters):
        char = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        if char in "\"'":
            return e.line, e.column, "unterminated string: a string ends with its quote on the same line"
        return e.line, e.column, f"unexpected character {char!r}: {describe(e.allowed)}"
    if isinstance(e, UnexpectedEOF):
        return (*_end_of(text), f"unexpected end of text: {describe(e.expected)}")
    return getattr(e, "line", 1) or 1, getattr(e, "column", 1) or 1, str(e)


def _blank_line(text: str, line: int) -> str | None:
    """The text with one op line replaced by nothing, so parsing can look for further errors;
    None when the line holds structure (a function, block or its end) that cannot go."""
    lines = text.split("\n")
    if not 0 < line <= len(lines):
        return None
    content = lines[line - 1].strip()
    if not content or "{" in content or "}" in content:
        return None
    lines[line - 1] = ""
    return "\n".join(lines)


def _check_depth(program: Program, filename, text) -> None:
    too_deep = []
    stack = [(b, 1) for fn in program.functions.values() for b in fn.blocks.values()]
    while stack:
        block, depth = stack.pop()
        if depth > MAX_BLOCK_DEPTH:
            too_deep.append(block.loc or (1, 1))
            continue
        for op in block.operations:
            stack.extend((b, depth + 1) for b in op.blocks)
    if too_deep:
        line, column = min(too_deep)
        raise ParseError(f"blocks are nested more than {MAX_BLOCK_DEPTH} deep", line, column,
                         filename, source_line(text, line))
