"""Diagnostics as text for people (`file:line:col: error: message`, the source line, a caret,
notes indented beneath) and as JSON for tools."""
from __future__ import annotations

import json

from ..errors import format_diagnostic
from .diagnostics import Diagnostic

NOTE_INDENT = "  "


def render_text(diagnostics: list[Diagnostic], sources: dict | None = None) -> str:
    """Every diagnostic, each followed by its notes; `sources` maps a file name to its text,
    for the source lines under the messages."""
    lines = _SourceLines(sources or {})
    out = []
    for d in diagnostics:
        out.append(_one(d, lines))
        for n in d.notes:
            out.append("\n".join(NOTE_INDENT + part for part in _one(n, lines).split("\n")))
    return "\n".join(out) + ("\n" if out else "")


def render_json(diagnostics: list[Diagnostic]) -> str:
    return json.dumps([d.to_dict() for d in diagnostics], indent=1, ensure_ascii=False) + "\n"


def summary(diagnostics: list[Diagnostic]) -> str:
    errors = sum(d.severity == "error" for d in diagnostics)
    warnings = sum(d.severity == "warning" for d in diagnostics)
    return f"{_count(errors, 'error')}, {_count(warnings, 'warning')}"


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _one(d: Diagnostic, lines: "_SourceLines") -> str:
    if d.line is None:  # a note with no place of its own is plain advice
        return f"{d.file}: {d.severity}: {d.message}" if d.file and d.severity != "note" \
            else f"{d.severity}: {d.message}"
    return format_diagnostic(d.file, d.line, d.column or 1, d.message, lines.get(d.file, d.line),
                             d.severity)


class _SourceLines:
    """Lines of each source text, split once, counted the way the parser counts them."""

    def __init__(self, sources: dict):
        self.sources, self.split = sources, {}

    def get(self, file, line: int) -> str | None:
        if file not in self.split:
            text = self.sources.get(file)
            self.split[file] = text.split("\n") if text is not None else None
        lines = self.split[file]
        if lines is None or not 0 < line <= len(lines):
            return None
        return lines[line - 1].rstrip("\r")
