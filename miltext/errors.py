"""The errors miltext raises for bad input, each saying where and what in a user's words."""
from __future__ import annotations


def format_diagnostic(filename: str | None, line: int, column: int, message: str,
                      source_line: str | None, severity: str = "error") -> str:
    """`file:line:col: error: message`, then the source line and a caret under the column."""
    head = f"{filename or '<input>'}:{line}:{column}: {severity}: {message}"
    if source_line is None:
        return head
    shown = source_line.rstrip("\n")
    # Keep the caret under the column when the line holds tabs; cut very long lines around it.
    start = 0
    if len(shown) > 160 and column > 80:
        start = column - 60
        shown = "..." + shown[start:start + 150]
        start -= 3
    elif len(shown) > 160:
        shown = shown[:157] + "..."
    pad = "".join("\t" if c == "\t" else " " for c in shown[: max(column - 1 - start, 0)])
    return f"{head}\n{shown}\n{pad}^"


class ParseError(ValueError):
    """MIL text that does not parse. `.line` and `.column` are 1-based; `.errors` holds every
    error found in the run (this one first), each a (line, column, message) triple."""

    def __init__(self, message: str, line: int, column: int, filename: str | None = None,
                 source_line: str | None = None, errors: list | None = None, text: str | None = None):
        self.message, self.line, self.column, self.filename = message, line, column, filename
        self.source_line, self.text = source_line, text
        self.errors = errors or [(line, column, message)]
        super().__init__(self.render())

    def render(self) -> str:
        return format_diagnostic(self.filename, self.line, self.column, self.message, self.source_line)

    def render_all(self, text: str | None = None) -> str:
        """Every error of the run, each with its source line."""
        text = text if text is not None else self.text
        lines = text.split("\n") if text is not None else None
        out = []
        for line, column, message in self.errors:
            source = lines[line - 1] if lines is not None and 0 < line <= len(lines) else None
            if source is None and (line, column) == (self.line, self.column):
                source = self.source_line
            out.append(format_diagnostic(self.filename, line, column, message, source))
        return "\n".join(out)


class InputError(ValueError):
    """A file that cannot be read as what it should be; the message names the file and why."""


class ProgramError(ValueError):
    """A program that cannot become a MIL proto (a value left out, an undefined name)."""

    def __init__(self, message: str, loc: tuple | None = None):
        self.message, self.loc = message, loc
        where = f"{loc[0]}:{loc[1]}: " if loc else ""
        super().__init__(f"{where}{message}")

    @classmethod
    def at(cls, loc, message: str) -> "ProgramError":
        return cls(message, loc)
