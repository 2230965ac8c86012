"""What the language server knows of one text: the program (with its model section) or its
parse errors, check's findings, the names and the outline (worked out when first asked), and
its canonical form. Texts in Apple's model.mil dialect stay in it: their names are bare, and
they format as model.mil."""
from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import miltext

from ..errors import ParseError
from ..model.text import parse_model
from ..text import modelmil_printer, printer
from ..text.modelmil_words import looks_like_modelmil, text_version
from .names import Names
from .outline import outline
from .source import Source, from_loc



@dataclass
class Finding:
    severity: str    # "error", "warning", "note"
    range: tuple     # (start, end)
    message: str
    code: str        # "parse", or the rule of check that found it
    notes: list = field(default_factory=list)  # (range, message)


class CannotFormat(Exception):
    pass


class Analysis:
    def __init__(self, text: str):
        self.source = Source(text)
        self.modelmil = looks_like_modelmil(text)
        self.model = self.program = self.error = None
        try:
            self.model = parse_model(text)
            self.program = self.model.program
        except ParseError as e:
            self.error = e
        self._names = self._outline = None

    @property
    def names(self) -> Names | None:
        if self._names is None and self.program is not None:
            self._names = Names(self.program, self.source)
        return self._names

    @property
    def outline(self) -> list:
        if self._outline is None:
            self._outline = [] if self.program is None else outline(self.program, self.source, self.modelmil)
        return self._outline

    def findings(self) -> list[Finding]:
        if self.error is not None:
            return [Finding("error", self._range(line, column), message, "parse")
                    for line, column, message in self.error.errors]
        # A note with a place becomes related information; one without adds to the message.
        return [Finding(d.severity, self._range(d.line, d.column),
                        "\n".join([d.message] + [n.message for n in d.notes if n.line is None]),
                        d.rule or "check",
                        [(self._range(n.line, n.column), n.message) for n in d.notes if n.line is not None])
                for d in self._check()]

    def _check(self) -> list:
        check = getattr(miltext, "check", None)
        if check is None:
            return []
        parameters = inspect.signature(check).parameters
        if "section" in parameters:  # then the model section is checked against the program too
            return check(self.program, source=self.source.text, section=self.model.section)
        if "source" in parameters:  # then it places carets exactly
            return check(self.program, source=self.source.text)
        return check(self.program)

    def _range(self, line: int | None, column: int | None) -> tuple:
        if line is None:
            return (0, 0), (0, 0)
        return self.source.token_range((line - 1, (column or 1) - 1))

    def definition(self, pos: tuple) -> tuple | None:
        """The range of the declaration that the name at `pos` refers to."""
        found = self._lookup(pos)
        if found is None or found[1] is None or found[1].loc is None:
            return None
        return self.source.token_range(from_loc(found[1].loc))

    def hover(self, pos: tuple) -> tuple[str, tuple] | None:
        """Markdown on the name at `pos` (its type and what defines it), and the name's range."""
        found = self._lookup(pos)
        if found is None:
            return None
        (token, start, end), v = found
        if v is None:
            return f"`{token}`: nothing defines this name here", (start, end)
        return f"```mil\n{self._declaration(v)}\n```\n{self.names.describe(v)}", (start, end)

    def _declaration(self, v) -> str:
        if not self.modelmil:
            return printer.var_decl(v)
        if v.type is None:
            return v.name
        return f"{modelmil_printer.type_text(v.type, text_version(self.program))} {v.name}"

    def _lookup(self, pos: tuple):
        at = self.source.name_at(pos, bare=self.modelmil)
        if at is None or self.names is None:
            return None
        known, v = self.names.lookup(at[0], at[1])
        return (at, v) if known else None

    def formatted(self) -> str:
        """What `miltext fmt` writes (comments kept; model.mil stays model.mil), or CannotFormat
        saying why not."""
        if self.program is None:
            raise CannotFormat("the text does not parse")
        from ..source.formatter import format_source
        try:
            return format_source(self.source.text)
        except ValueError as e:  # what the printer cannot write, or would not be the same program
            raise CannotFormat(str(e)) from None
