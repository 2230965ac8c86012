"""Quick fixes: a diagnostic's suggestion put in place ("did you mean"), and a required input an
op lacks added to its call."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ophelp

# check words a suggestion as `...; did you mean 'relu'?` (or "relu", or a %name bare)
_DID_YOU_MEAN = re.compile(r"did you mean (?:'([^']+)'|\"([^\"]+)\"|([^\s?']+))\?")


@dataclass
class Fix:
    title: str
    range: tuple       # (start, end), 0-based code points
    text: str
    diagnostic: object = None


def suggestion_in(message: str) -> str | None:
    """The replacement a diagnostic's message suggests, when it has one."""
    m = _DID_YOU_MEAN.search(message)
    return next((g for g in m.groups() if g), None) if m else None


def fixes(analysis, diagnostics: list) -> list[Fix]:
    """The quick fixes for the client's diagnostics (LSP dicts or objects with range, code,
    message and data, places as (line, column) pairs)."""
    out = []
    for d in diagnostics:
        suggestion = (d.data or {}).get("suggestion") if isinstance(d.data, dict) else None
        suggestion = suggestion or suggestion_in(d.message)
        if suggestion:
            out.append(Fix(f"Change to {suggestion}", d.range, suggestion, d))
        if d.code == "missing-input":
            out += _missing_inputs(analysis, d)
    return out


def _missing_inputs(analysis, d) -> list[Fix]:
    """One fix for each required input the op on the diagnostic's line lacks and a var of the
    same name can give: `key=%key` put before the call's closing parenthesis. Where no such var
    is in scope there is no fix: one that wrote an undefined name would trade one error for another."""
    line_no = d.range[0][0]
    i = _piece_at(analysis, line_no)
    if i is None:
        return []
    p = analysis.reading.pieces[i]
    if not p.ops:
        return []
    op = p.ops[0]
    opset = ophelp.opset_at(analysis.program, line_no)
    close = _call_end(analysis, p.start, p.end)
    if close is None:
        return []
    out = []
    in_scope = {d.name for d in analysis.index.visible(close)}
    for spec in ophelp.inputs(op.type, opset):
        if spec["optional"] or spec["name"] in op.inputs or spec["name"] in op.attributes:
            continue
        if spec["name"] not in in_scope:
            continue
        key = spec["name"]
        before = analysis.source.line(close[0])[:close[1]].rstrip()
        sep = "" if before.endswith("(") else ", "
        value = key if analysis.modelmil else "%" + key
        text = f"{sep}{key} = {value}" if analysis.modelmil else f"{sep}{key}={value}"
        out.append(Fix(f"Add the required input {key}", (close, close), text, d))
    return out


def _piece_at(analysis, line: int) -> int | None:
    from bisect import bisect_right
    starts = analysis.index._piece_starts
    i = bisect_right(starts, line) - 1
    if i >= 0 and line < analysis.reading.pieces[i].end:
        return i
    return None


def _call_end(analysis, start: int, end: int) -> tuple | None:
    """The place of the closing parenthesis of the first op call in lines [start, end)."""
    m = None
    for n in range(start, end):
        line = analysis.source.line(n)
        m = ophelp.OP_TYPE.search(line)
        if m:
            break
    if m is None:
        return None
    depth, text_line, column = 1, n, m.end()
    while text_line < end:
        line = re.sub(r'"(?:[^"\\]|\\.)*"', lambda s: " " * len(s.group()), analysis.source.line(text_line))
        for c in range(column, len(line)):
            depth += (line[c] == "(") - (line[c] == ")")
            if depth == 0:
                return (text_line, c)
        text_line, column = text_line + 1, 0
    return None
