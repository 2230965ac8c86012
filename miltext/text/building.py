"""What the builders of both dialects share (mil/builder.py for miltext's text and coremltools'
print, modelmil/parser.py for Apple's model.mil): a Lark transformer base with the callbacks
their grammars' rules have alike, the marker classes passed between rules, and one mapping of a
parse's failures to the LocatedError that parse_errors.collect_errors reports."""
from __future__ import annotations

from lark import Transformer
from lark.exceptions import UnexpectedInput

from .. import dtypes
from ..ir import TensorType
from . import lexemes
from .literals import DictLit, ListLit, LiteralError
from .parse_errors import BuildFailure, LocatedError, lark_error, place_of


class Attrs(dict):
    """Attributes as read, `[key=value, ...]`; `pos`, the place of each key."""


class Bindings(list):
    """A parenthesized list of an input's bindings, (%a, %b)."""


def fail(message: str, pos) -> None:
    raise BuildFailure(message, pos)


def located(e: Exception, text: str, describe, raw: bool = False, hint=None) -> LocatedError:
    """The failure `e` of one parse of `text` (a BuildFailure, Lark's UnexpectedInput or a
    RecursionError) as a LocatedError in a user's words; `describe` says what the parser
    expected, `raw` that the text is coremltools' print, `hint` adds a word for a known slip."""
    if isinstance(e, BuildFailure):
        line, column = e.pos or (1, 1)
        return LocatedError(line, column, e.message)
    if isinstance(e, UnexpectedInput):
        return lark_error(e, text, describe, raw, hint)
    return LocatedError(1, 1, "the text is nested too deeply to parse")


class TextBuilder(Transformer):
    """The callbacks both grammars' rules share; a builder adds its dialect's."""
    raw_strings = False  # coremltools' print: strings are raw, without escapes
    current = None       # the token the lexer handed over last, when tracked: a fallback place for errors

    def _fail(self, message: str, pos=None):
        raise BuildFailure(message, pos or (place_of(self.current) if self.current is not None else None))

    def _text(self, tok) -> str:
        """The text of a string token; a bad escape is an error at its place."""
        if self.raw_strings:
            return tok[1:-1]
        try:
            return lexemes.unquote(tok)
        except ValueError as e:
            offset = getattr(e, "offset", 0)
            self._fail(str(e), (tok.line, tok.column + offset) if offset else place_of(tok))

    def _int(self, tok) -> int:
        """An integer token's value; one too long for any MIL integer is an error at its place."""
        try:
            return lexemes.parse_int(tok)
        except LiteralError as e:
            self._fail(str(e), place_of(tok))

    def _dtype(self, tok) -> str:
        try:
            return dtypes.by_name(str(tok)).name
        except KeyError:
            self._fail(f"unknown dtype {tok}", place_of(tok))

    def _attribute_name(self, key) -> str:
        return str(key)

    # ---- types ----
    def scalar_type(self, items):
        return TensorType(self._dtype(items[0]))

    def int_dim(self, items):
        n = self._int(items[0])
        if n < 0:
            self._fail(f"a dimension cannot be negative ({n})", place_of(items[0]))
        return n

    # ---- attributes ----
    def attributes(self, items):
        out = Attrs()
        out.pos = {}
        for item in items:
            if item is None:
                continue
            key, value = item
            if key in out:
                self._fail(f"attribute {str(key)!r} is given twice", place_of(key))
            name = self._attribute_name(key)
            out[name] = value
            out.pos[name] = place_of(key)
        return out

    # ---- literals ----
    def int_lit(self, items):
        return self._int(items[0])

    def float_lit(self, items):
        return lexemes.parse_float(items[0])

    def string_lit(self, items):
        return self._text(items[0])

    def true_lit(self, items):
        return True

    def false_lit(self, items):
        return False

    def list_lit(self, items):
        out = ListLit(x for x in items[1:] if x is not None)
        out.pos = place_of(items[0])
        return out

    def dict_lit(self, items):
        out = DictLit(x for x in items[1:] if x is not None)
        out.pos = place_of(items[0])
        return out
