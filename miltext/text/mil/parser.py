"""MIL text → object model: Lark's LALR parser running the transformer of builder.py, and
the errors it finds in a user's words (several per run).

Two lexer flavours share the grammar: miltext's own, where strings have backslash escapes, and
coremltools' print, whose strings and names are raw (`"say "hi""`, `%layer.0/relu:0`); `parse`
picks by the text's look, and hands Apple's model.mil dialect to modelmil.parser.
"""
from __future__ import annotations

import re
import threading

from lark import Lark
from lark.exceptions import UnexpectedInput

from ...bulk import bulk
from ...errors import ParseError
from ...ir import Program
from .builder import MAX_BLOCK_DEPTH, _Builder
from ..grammars import cache_path, grammar_text
from ..lexemes import LiteralError
from ..messages import describe_expected
from ..modelmil.words import looks_like_modelmil
from ..parse_errors import BuildFailure, LocatedError, collect_errors, lark_error, mil_hint, source_line  # noqa: F401 - source_line is public here

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
        text = grammar_text(raw=raw)   # raw: the flavour that reads coremltools' print
        self.tracker = _Tracker()
        self.builder = _Builder(raw_strings=raw)
        self.tracker.builder = self.builder
        self.lark = Lark(text, parser="lalr", lexer="contextual", transformer=self.builder,
                         postlex=self.tracker, maybe_placeholders=True, cache=cache_path("raw" if raw else "mil", text))
        self.lock = threading.Lock()

    def parse(self, text: str, editing: bool = False):
        with self.lock:
            self.builder.editing = editing
            try:
                return self.lark.parse(text)
            except BuildFailure as e:
                if e.pos is not None:
                    raise
            except LiteralError:  # a literal refused where nothing knew its place
                pass
            finally:
                self.builder.type_depth.clear()
                self.builder.simple_types.clear()
                self.builder.tensor_types.clear()
            self.tracker.tracking = True
            try:
                return self.lark.parse(text)
            except LiteralError as e:
                current = self.builder.current
                raise BuildFailure(str(e), (current.line, current.column) if current is not None else None) from None
            finally:
                self.tracker.tracking = False
                self.builder.current = None
                self.builder.type_depth.clear()
                self.builder.simple_types.clear()
                self.builder.tensor_types.clear()
                self.builder.editing = False


_PARSERS: dict = {}


def _parser(raw: bool) -> _Parser:
    p = _PARSERS.get(raw)
    if p is None:
        p = _PARSERS[raw] = _Parser(raw)
    return p


# The marks every coremltools print carries: a var type followed by (Tensor)/(Scalar)/...
_COREMLTOOLS_PRINT = re.compile(r"\)[*^]?\((Tensor|Scalar|List)\)")

# A print's first var declaration (a function input or the first op's output) carries the mark.
_PRINT_MARK_WITHIN = 1 << 16
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def looks_like_coremltools_print(text: str) -> bool:
    """coremltools marks every var type with (Tensor), (Scalar) or (List); canonical text never
    does, outside its strings."""
    head = text[:_PRINT_MARK_WITHIN]
    found = _COREMLTOOLS_PRINT.search(head)
    return found is not None and _COREMLTOOLS_PRINT.search(_QUOTED.sub('""', head)) is not None


def parse(text: str, filename: str | None = None, *, with_model: bool = False, editing: bool = False):
    """Parse MIL text; raise ParseError (with every error found, up to MAX_ERRORS). With
    `with_model`, return (the model section or None, the program). Apple's model.mil dialect
    is recognized by its header and read by its own parser. With `editing`, a reading an editor
    holds and reads again piece by piece: its plain ops are CompactOperations (miltext.ir.compact)
    and a `blob` without its offset stays a blob_layout.ImpliedBlob, its offset left for
    blob_layout.fill_in(..., keep_marks=True) to work out over the whole text."""
    if looks_like_modelmil(text):
        from ..modelmil.parser import parse as parse_modelmil
        program = parse_modelmil(text, filename, editing=editing)
        return (None, program) if with_model else program
    raw = looks_like_coremltools_print(text)
    program = collect_errors(text, filename, lambda attempt: _parse_once(attempt, raw, editing), raw)
    model, program = program if isinstance(program, tuple) else (None, program)
    _check_depth(program, filename, text)
    return (model, program) if with_model else program


def _parse_once(text: str, raw: bool, editing: bool = False) -> Program:
    parser = _parser(raw)
    try:
        with bulk():
            return parser.parse(text, editing)
    except BuildFailure as e:
        line, column = e.pos or (1, 1)
        raise LocatedError(line, column, e.message) from None
    except UnexpectedInput as e:
        raise lark_error(e, text, lambda names: describe_expected(names, parser.lark), raw, mil_hint) from None
    except RecursionError:
        raise LocatedError(1, 1, "the text is nested too deeply to parse") from None


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
