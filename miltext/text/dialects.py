"""The one door for MIL text: the dialects miltext reads and writes, each an object looked up by
name, and the entry point for each direction (`parse`, `parse_fragment`, `print_text`).

- `mil`: miltext's own text, read and written (canonical, or an author's layout kept);
- `coremltools`: coremltools' print of a program, read only: its strings and names are raw;
- `modelmil`: the model.mil text of Apple's compiler, read and written.

Reading needs no choice: `detect` knows each dialect by its look, here and nowhere else.
Importing this module is light (no Lark): the parsers load when a text is first read.
"""
from __future__ import annotations

import re

from .options import PRINT, READ, PrintOptions, ReadOptions  # noqa: F401 - the door's own options

# The dialects `print_text` writes.
WRITTEN = ("mil", "modelmil")


class Dialect:
    """One dialect of MIL text."""
    name: str = ""
    writes = True
    fragments: tuple = ()

    def detect(self, text: str) -> bool:
        """Whether `text` is in this dialect, by its look."""
        raise NotImplementedError

    def parse(self, text: str, filename: str | None = None, options: ReadOptions = READ,
              with_model: bool = False):
        """The Program of `text` (ParseError with every error found); with `with_model`,
        (the model section or None, the program)."""
        raise NotImplementedError

    def parse_fragment(self, text: str, what: str, filename: str | None = None, options: ReadOptions = READ):
        """A piece of text read alone, at the top of `text`: `ops` (an op with the blocks it owns)
        as a list of ops, and the other `fragments` of the dialect."""
        raise NotImplementedError

    def print_text(self, program, options: PrintOptions = PRINT) -> str:
        raise ValueError(f"miltext reads {self.name} text but does not write it: "
                         f"the dialects it writes are {', '.join(WRITTEN)}")

    def _check_fragment(self, what: str) -> None:
        if what not in self.fragments:
            raise ValueError(f"what is one of {', '.join(self.fragments)}, not {what!r}")

    def __repr__(self) -> str:
        return f"<dialect {self.name}>"


class _Mil(Dialect):
    name = "mil"
    raw = False
    fragments = ("ops", "block")

    def detect(self, text: str) -> bool:
        return not MODELMIL.detect(text) and not COREMLTOOLS.detect(text)

    def parse(self, text, filename=None, options=READ, with_model=False):
        from .mil.parser import parse_text
        model, program = parse_text(text, filename, self.raw, options)
        return (model, program) if with_model else program

    def parse_fragment(self, text, what, filename=None, options=READ):
        self._check_fragment(what)
        from .mil.parser import parse_fragment
        return parse_fragment(text, "fragment" if what == "ops" else what, filename, self.raw, options)

    def print_text(self, program, options=PRINT) -> str:
        from .mil.printer import print_program
        return print_program(program, options)


# The marks every coremltools print carries: a var type followed by (Tensor)/(Scalar)/...
_COREMLTOOLS_PRINT = re.compile(r"\)[*^]?\((Tensor|Scalar|List)\)")
# A print's first var declaration (a function input or the first op's output) carries the mark.
_PRINT_MARK_WITHIN = 1 << 16
_QUOTED = re.compile(r'"(?:[^"\\\n]|\\.)*"')


class _CoremltoolsPrint(_Mil):
    name = "coremltools"
    raw = True
    writes = False

    def detect(self, text: str) -> bool:
        """coremltools marks every var type with (Tensor), (Scalar) or (List); canonical text
        never does, outside its strings."""
        if MODELMIL.detect(text):
            return False
        head = text[:_PRINT_MARK_WITHIN]
        found = _COREMLTOOLS_PRINT.search(head)
        return found is not None and _COREMLTOOLS_PRINT.search(_QUOTED.sub('""', head)) is not None

    print_text = Dialect.print_text


class _ModelMil(Dialect):
    name = "modelmil"
    fragments = ("ops", "operation", "call", "type", "value")

    def detect(self, text: str) -> bool:
        from .modelmil.words import looks_like_modelmil
        return looks_like_modelmil(text)

    def parse(self, text, filename=None, options=READ, with_model=False):
        from .modelmil.parser import parse
        program = parse(text, filename, options)
        return (None, program) if with_model else program

    def parse_fragment(self, text, what, filename=None, options=READ):
        self._check_fragment(what)
        from .modelmil.parser import parse_fragment
        if what == "ops":
            return [parse_fragment(text, "operation", filename, options)]
        return parse_fragment(text, what, filename, options)

    def print_text(self, program, options=PRINT) -> str:
        from .modelmil.printer import print_modelmil
        return print_modelmil(program, options.version)


MIL, COREMLTOOLS, MODELMIL = _Mil(), _CoremltoolsPrint(), _ModelMil()
DIALECTS = {d.name: d for d in (MIL, COREMLTOOLS, MODELMIL)}


def named(name: str | Dialect) -> Dialect:
    """The dialect of that name (a Dialect is itself)."""
    if isinstance(name, Dialect):
        return name
    found = DIALECTS.get(name)
    if found is None:
        raise ValueError(f"unknown dialect {name!r}: the dialects are {', '.join(DIALECTS)}")
    return found


def detect(text: str) -> Dialect:
    """The dialect of `text`: model.mil by its header, coremltools' print by the marks of its
    types, else miltext's own."""
    if MODELMIL.detect(text):
        return MODELMIL
    return COREMLTOOLS if COREMLTOOLS.detect(text) else MIL


def parse(text: str, filename: str | None = None, *, dialect: str | Dialect | None = None,
          options: ReadOptions = READ, with_model: bool = False):
    """MIL text → Program, in `dialect` (by default the one `detect` sees). ParseError with
    every error found; with `with_model`, (the model section or None, the program)."""
    found = detect(text) if dialect is None else named(dialect)
    return found.parse(text, filename, options, with_model)


def parse_fragment(text: str, what: str = "ops", *, dialect: str | Dialect, filename: str | None = None,
                   options: ReadOptions = READ):
    """A piece of text in `dialect` read alone (see Dialect.parse_fragment); its places are
    counted from the top of `text`."""
    return named(dialect).parse_fragment(text, what, filename, options)


def print_text(program, dialect: str | Dialect = "mil", options: PrintOptions = PRINT) -> str:
    """The text of `program` in `dialect` (ProgramError for what the dialect cannot express)."""
    if not isinstance(dialect, Dialect) and dialect not in WRITTEN:   # coremltools' print is read only
        raise ValueError(f"unknown dialect {dialect!r}: the dialects are {', '.join(WRITTEN)}")
    return named(dialect).print_text(program, options)
