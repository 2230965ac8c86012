"""What the language server knows of one text: its reading (the program, put together from ops
parsed one at a time, and the errors of those that do not parse), check's findings, the names
and the outline (worked out when first asked), and its canonical form. Each analysis starts
from the one before it, so what an edit did not touch is not worked out again. Texts in Apple's
model.mil dialect stay in it: their names are bare, and they format as model.mil."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from . import checking
from .actions import suggestion_in
from .document import Reading
from .document_text import Source
from .index import Index
from .inference import Types
from .outline import Outlines, outline


@dataclass(slots=True)
class Finding:
    severity: str    # "error", "warning", "note"
    range: tuple     # (start, end)
    message: str
    code: str        # "parse", or the rule of check that found it
    notes: list = field(default_factory=list)  # (range, message)
    suggestion: str | None = None   # a replacement for the range, when check has one


class CannotFormat(Exception):
    pass


class Analysis:
    def __init__(self, text: str, previous: "Analysis | None" = None, path: str | None = None, headers=None):
        self.reading = Reading(text, previous.reading if previous is not None else None)
        self.index = Index(self.reading, previous.index if previous is not None else None)
        self.source = Source(text, self.reading.lines)
        self.source.layout = self.reading.layout if self.reading.by_pieces else None
        self.modelmil = self.reading.modelmil
        self.model, self.program = self.reading.model, self.reading.program
        self.path = path
        # the weight files' headers, kept from one analysis to the next (weight_headers.Headers)
        self.headers = headers if headers is not None or previous is None else previous.headers
        self._previous = previous
        self._diagnostics = None
        self.complete = False    # whether the check findings come from a check of the whole program
        # the inferred types, op by op when asked, from those of the analysis before
        self.types = Types(self, previous.types if previous is not None else None)
        # the outline's JSON, with what is slow to find for each op kept in its piece
        self.outlines = Outlines(self.reading, previous.outlines if previous is not None else None)

    @property
    def files(self) -> checking.Files:
        return checking.Files(self.path, self.weights, self.headers)

    @property
    def weights(self) -> str | None:
        """The weights folder beside the document (an unpacked model), as check would use it."""
        if self.path is None:
            return None
        folder = os.path.join(os.path.dirname(self.path), "weights")
        return folder if os.path.isdir(folder) else None

    @property
    def outline(self) -> list:
        """Worked out each time asked (a client asks once for each text): kept, it would be as
        big as the program."""
        return [] if self.program is None else outline(self.program, self.source, self.modelmil)

    def outline_json(self, units=None) -> str:
        """The outline as LSP's DocumentSymbol[] JSON, its columns in `units` (a pygls unit
        counter; None: code points), for a text whose lines are LSP's (no lone \\r)."""
        return "[]" if self.program is None else self.outlines.json(self.program, self.source, self.modelmil, units)

    # ---- findings ----
    def findings(self, complete: bool = False) -> list[Finding]:
        """Parse errors, then check's findings on what parses; with `complete`, from a check
        of the whole program (else from the previous analysis's where it can)."""
        out = [Finding("error", self._range(line, column), message, "parse")
               for line, column, message in self.reading.errors]
        # A note with a place becomes related information; one without adds to the message.
        out += [Finding(d.severity, self._range(d.line, d.column),
                        "\n".join([d.message] + [n.message for n in d.notes if n.line is None]),
                        d.rule or "check",
                        [(self._range(n.line, n.column), n.message) for n in d.notes if n.line is not None],
                        d.suggestion or suggestion_in(d.message))
                for d in self.diagnostics(complete)]
        said = set()  # a model section's mistake is both a parse error here and check's finding
        return [f for f in out if (f.range, f.message) not in said and not said.add((f.range, f.message))]

    def diagnostics(self, complete: bool = False) -> list:
        if self.program is None:
            return []
        if self._diagnostics is None or (complete and not self.complete):
            before = self._previous
            found = None
            if not complete and before is not None and before._diagnostics is not None:
                found = checking.incremental(before.index, self.index, before._diagnostics, self.files,
                                             self.reading.broken_names())
            if found is None:
                self.checked(self.whole_check())
            else:
                self._diagnostics = self._without_echoes(found)
                self._previous = None  # what it was worked out from is not needed any more
        return self._diagnostics

    def whole_check(self) -> list:
        """check's findings on the whole program, kept by `checked` (the server works them out
        in a thread of their own once the typing stops, and keeps them if the text is the same)."""
        return checking.full(self.program, self.source.text, self.files, self.reading.section)

    def checked(self, found: list) -> None:
        self._diagnostics, self.complete = self._without_echoes(found), True
        self._previous = None  # what it was worked out from is not needed any more

    def _without_echoes(self, diagnostics: list) -> list:
        """Without `x is not defined` for the names a line that does not parse declares: that
        line's error says it all."""
        broken = self.reading.broken_names()
        return [d for d in diagnostics if not checking.echo(d, broken)] if broken else diagnostics

    def _range(self, line: int | None, column: int | None) -> tuple:
        if line is None:
            return (0, 0), (0, 0)
        return self.source.token_range((line - 1, (column or 1) - 1))

    # ---- names ----
    def lookup(self, pos: tuple):
        """(occurrence, declaration or None) of the name at `pos`, or None."""
        o = self.index.at(pos)
        return None if o is None else (o, self.index.resolve(o))

    def definition(self, pos: tuple) -> tuple | None:
        """The range of the declaration that the name at `pos` refers to."""
        found = self.lookup(pos)
        if found is None or found[1] is None:
            return None
        return found[1].start, found[1].end

    def hover(self, pos: tuple) -> tuple[str, tuple] | None:
        """Markdown on the name at `pos` (its type and what defines it), and the name's range."""
        found = self.lookup(pos)
        if found is None:
            return None
        o, d = found
        if d is None:
            return f"`{self.source.line(o.start[0])[o.start[1]:o.end[1]]}`: nothing defines this name here", (o.start, o.end)
        return f"```mil\n{self.declaration(d.var)}\n```\n{d.what}", (o.start, o.end)

    def hover_op(self, pos: tuple) -> tuple[str, tuple] | None:
        """Markdown on the op type at `pos`: its signature in the function's opset."""
        from . import ophelp
        found = ophelp.op_type_at(self.source.line(pos[0]), pos[1])
        if found is None:
            return None
        text = ophelp.signature(found[0], ophelp.opset_at(self.program, pos[0]))
        return None if text is None else (text, ((pos[0], found[1]), (pos[0], found[2])))

    def references(self, pos: tuple, with_declaration: bool = True) -> list:
        """The occurrences of the name at `pos` that refer to what it refers to."""
        found = self.lookup(pos)
        if found is None or found[1] is None:
            return []
        return [o for o in self.index.references(found[1]) if with_declaration or not o.declares]

    def rename(self, pos: tuple, new_name: str) -> list | None:
        """(range, text) edits that rename the var at `pos` everywhere it is meant; ValueError
        for a name the dialect cannot write, or one its function already declares (the program
        would change: another var's uses would follow it, or it theirs)."""
        found = self.lookup(pos)
        if found is None or found[1] is None:
            return None
        name, text = self._written_name(new_name)
        decl = found[1]
        if name != decl.name:
            where = self.index.function_of(decl.start[0])
            for other in self.index.decls_of(name):
                if where is None or self.index.function_of(other.start[0]) == where:
                    raise ValueError(f"{text} is already defined on line {other.start[0] + 1}: "
                                     "renaming to it would change what the program computes")
            if name in self.reading.broken_names():
                raise ValueError(f"{text} is written on a line that does not parse: fix it first")
        return [((o.start, o.end), text) for o in self.index.references(decl)]

    def _written_name(self, new_name: str) -> tuple[str, str]:
        """(name, its text) of a new name as the user typed it (`y`, `%y`, `%"a b"`), or
        ValueError when the dialect cannot write it."""
        from ..text.lexemes import var, var_name
        from .document_text import RAW_VAR, VAR
        if self.modelmil:
            from ..text.modelmil.words import is_name
            if not is_name(new_name):
                raise ValueError(f"{new_name!r} is not a name model.mil can write: an identifier "
                                 "([A-Za-z_][A-Za-z0-9_]*) that is not one of its words (tensor, fp32, ...)")
            return new_name, new_name
        name = var_name(new_name) if VAR.fullmatch(new_name) else new_name.removeprefix("%")
        if not name:
            raise ValueError("a var needs a name")
        if self.reading.raw:   # a coremltools print writes names raw, never quoted
            text = "%" + name
            if not RAW_VAR.fullmatch(text):
                raise ValueError(f"{new_name!r} cannot be written as a var name in a coremltools print "
                                 "(no white space, comma, bracket, = or colon-space)")
            return name, text
        text = var(name)
        if not VAR.fullmatch(text) or var_name(text) != name:
            raise ValueError(f"{new_name!r} cannot be written as a var name")
        return name, text

    def declaration(self, v) -> str:
        """How the text declares a var, with its inferred type when the text leaves it out."""
        from .types import declaration
        t = v.type if v.type is not None else self.inferred(v)
        return declaration(v.name, t, self.modelmil, self.program) + ("" if v.type is not None or t is None else "  # inferred")

    def inferred(self, v):
        """The type inference gives var `v`, an output the text leaves untyped, or None."""
        if self.program is None or not v.loc:
            return None
        return self.types.of(v, v.loc[0] - 1)

    def formatted(self) -> str:
        """What `miltext fmt` writes (comments kept; model.mil stays model.mil), or CannotFormat
        saying why not."""
        if self.program is None or self.reading.errors:
            raise CannotFormat("the text does not parse")
        from ..authored.formatter import format_source
        try:
            return format_source(self.source.text)
        except ValueError as e:  # what the printer cannot write, or would not be the same program
            raise CannotFormat(str(e)) from None


# One small text in each dialect, with an op whose output type is left to inference, and the
# places of a var and of an op type in it.
_WARM_UP = (
    ('main[CoreML7](%x: (1, 4, fp32)) {\n  block0() {\n    %y: (1, 4, fp32) = relu(x=%x, name="y")\n'
     '    %z = relu(x=%y, name="z")\n  } -> (%z)\n}\n', (3, 5), (3, 11)),
    ('program(1.0)\n{\n    func main<ios17>(tensor<fp32, [1, 4]> x) {\n'
     '            tensor<fp32, [1, 4]> y = relu(x = x)[name = tensor<string, []>("y")];\n'
     '        } -> (y);\n}\n', (3, 33), (3, 38)),
)


def warm_up() -> None:
    """Load what analysing, checking, hovering, completing and formatting need (the checker,
    inference, both parsers, the formatter), so that the first document opened pays only for
    itself, in time and in memory."""
    from ..model import blobs  # noqa: F401 (blob offsets, checked when weights/ is beside the text)
    from .completion import complete
    for text, a_var, an_op in _WARM_UP:
        a = Analysis(text)
        a.findings(complete=True)
        a.hover(a_var)
        a.hover_op(an_op)
        a.references(a_var)
        complete(a, an_op)
        a.outline_json()
        try:
            a.formatted()
        except CannotFormat:
            pass
