"""MIL text → object model: Lark's LALR parser running the transformer of builder.py, and
the errors it finds in a user's words (several per run).

Two lexer flavours share the grammar: miltext's own, where strings have backslash escapes, and
coremltools' print, whose strings and names are raw (`"say "hi""`, `%layer.0/relu:0`). Which one
a text is in is text.dialects' choice (the one door for MIL text), as is handing Apple's
model.mil dialect to modelmil.parser.
"""
from __future__ import annotations

import threading

from lark import Lark
from lark.exceptions import UnexpectedInput

from ...bulk import bulk
from ...errors import ParseError
from ...ir import Function, Operation, Program
from ..building import located
from ..grammars import cache_path, grammar_text
from ..lexemes import LiteralError
from ..messages import describe_expected
from ..options import READ, ReadOptions
from ..parse_errors import BuildFailure, collect_errors, mil_hint, source_line  # noqa: F401 - source_line is public here
from .builder import MAX_BLOCK_DEPTH, _Builder


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


# The starts a parser serves. A whole text and a fragment (the language server's pieces) have
# parsers of their own: LALR tables built for several starts merge states, which changes what
# an error says was expected in a whole text.
STARTS = {"start": ["start"], "fragment": ["fragment", "block"], "block": ["fragment", "block"]}


class _Parser:
    def __init__(self, raw: bool, starts: list):
        text = grammar_text(raw=raw)   # raw: the flavour that reads coremltools' print
        self.tracker = _Tracker()
        self.builder = _Builder(raw_strings=raw)
        self.tracker.builder = self.builder
        flavour = ("raw" if raw else "mil") + ("" if starts == ["start"] else "-" + "-".join(starts))
        self.lark = Lark(text, parser="lalr", lexer="contextual", transformer=self.builder, start=starts,
                         postlex=self.tracker, maybe_placeholders=True, cache=cache_path(flavour, text))
        self.lock = threading.Lock()

    def parse(self, text: str, options: ReadOptions, start: str = "start"):
        with self.lock:
            self.builder.options = options
            try:
                return self.lark.parse(text, start=start)
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
                return self.lark.parse(text, start=start)
            except LiteralError as e:
                current = self.builder.current
                raise BuildFailure(str(e), (current.line, current.column) if current is not None else None) from None
            finally:
                self.tracker.tracking = False
                self.builder.current = None
                self.builder.type_depth.clear()
                self.builder.simple_types.clear()
                self.builder.tensor_types.clear()
                self.builder.options = None


_PARSERS: dict = {}


def _parser(raw: bool, start: str = "start") -> _Parser:
    key = (raw, STARTS[start][0])
    p = _PARSERS.get(key)
    if p is None:
        p = _PARSERS[key] = _Parser(raw, STARTS[start])
    return p


def parse_text(text: str, filename: str | None, raw: bool, options: ReadOptions = READ) -> tuple:
    """(the model section or None, the program) of miltext's text, or with `raw` of
    coremltools' print; ParseError with every error found, up to MAX_ERRORS."""
    program = collect_errors(text, filename, lambda attempt: _parse_once(attempt, raw, options), raw)
    model, program = program if isinstance(program, tuple) else (None, program)
    _check_depth(program.functions.values(), 1, filename, text)
    return model, program


def parse_fragment(text: str, start: str, filename: str | None, raw: bool, options: ReadOptions = READ):
    """A `fragment` (ops, each with the blocks it owns: a list) or a `block` read alone, as if
    it stood in a function's block."""
    found = collect_errors(text, filename, lambda attempt: _parse_once(attempt, raw, options, start), raw)
    if start == "block":
        found = found.block
        _check_depth([found], 1, filename, text)
    else:
        _check_depth(found, 2, filename, text)
    return found


def _parse_once(text: str, raw: bool, options: ReadOptions, start: str = "start") -> Program:
    parser = _parser(raw, start)
    try:
        with bulk():
            return parser.parse(text, options, start)
    except (BuildFailure, UnexpectedInput, RecursionError) as e:
        raise located(e, text, lambda names: describe_expected(_in_block(names) if start == "fragment" else names,
                                                               parser.lark), raw, mil_hint) from None


def _in_block(names) -> set:
    """What the parser expected where a fragment stands: in a block, where an op may start, so
    may the block's closing `}`."""
    names = set(names)
    return names | {"RBRACE"} if "SIMPLE_OPS" in names else names


def _check_depth(parents, depth: int, filename, text) -> None:
    """Blocks nested more than MAX_BLOCK_DEPTH deep are refused; `parents` are functions, ops or
    blocks whose blocks are `depth` deep."""
    too_deep = []
    stack = [(b, depth) for parent in parents
             for b in (parent.blocks.values() if isinstance(parent, Function) else
                       parent.blocks if isinstance(parent, Operation) else [parent])]
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
