"""What `check` reports: a Diagnostic has a severity, a message, a place and notes."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Diagnostic:
    """One finding. `line` and `column` are 1-based and None when the program was not parsed
    from text; `rule` names the check that found it (docs/check.md lists them); `notes` are
    Diagnostics of severity "note" that point at related places ("first defined here");
    `suggestion` is the text that would replace what is at the place ("did you mean"), for
    editors to offer as a fix."""
    severity: str
    message: str
    line: int | None = None
    column: int | None = None
    file: str | None = None
    rule: str = ""
    notes: list[Diagnostic] = field(default_factory=list)
    suggestion: str | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == "error"

    def to_dict(self) -> dict:
        out = {"file": self.file, "line": self.line, "column": self.column,
               "severity": self.severity, "message": self.message}
        if self.rule:
            out["rule"] = self.rule
        if self.notes:
            out["notes"] = [n.to_dict() for n in self.notes]
        return out


def located(severity: str, loc: tuple | None, message: str, rule: str = "",
            notes: list | None = None) -> Diagnostic:
    line, column = loc if loc else (None, None)
    return Diagnostic(severity, message, line, column, rule=rule, notes=list(notes or ()))


def note(loc: tuple | None, message: str) -> Diagnostic:
    return located("note", loc, message)


def in_source_order(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Sorted by place; those with no place keep their order, after the others."""
    return sorted(diagnostics, key=lambda d: (d.line is None, d.line or 0, d.column or 0))


def with_file(diagnostics: list[Diagnostic], filename: str | None) -> list[Diagnostic]:
    for d in diagnostics:
        d.file = filename
        with_file(d.notes, filename)
    return diagnostics
