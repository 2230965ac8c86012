"""Types for hover and inlay hints: a var's declaration as its dialect writes it, and the types
inference gives the outputs a text leaves untyped (the shorthand; see inference)."""
from __future__ import annotations

from ..ir import Program, Var
from ..text.mil import printer
from ..text.modelmil import printer as modelmil_printer
from ..text.modelmil.words import text_version


def declaration(name: str, t, modelmil: bool, program) -> str:
    if not modelmil:
        return printer.var_decl(Var(name, t))
    if t is None:
        return name
    return f"{modelmil_printer.type_text(t, text_version(program or Program()))} {name}"


def hints(analysis, first: int, last: int) -> list[tuple]:
    """(place, label) of an inferred type after each untyped op output on lines [first, last]."""
    from bisect import bisect_left, bisect_right

    from ..text.lexemes import var
    from .index import written_end
    reading = analysis.reading
    starts = analysis.index._piece_starts
    out = []
    for p in reading.pieces[max(bisect_right(starts, first) - 1, 0):bisect_left(starts, last + 1)]:
        stack = list(p.ops)
        while stack:
            op = stack.pop()
            for v in op.outputs:
                if v.type is None and v.loc and first <= v.loc[0] - 1 <= last:
                    t = analysis.inferred(v)
                    if t is not None:
                        written = v.name if analysis.modelmil else var(v.name)
                        label = declaration(v.name, t, analysis.modelmil, analysis.program)
                        label = label[len(written):] if label.startswith(written) else " " + label
                        start = (v.loc[0] - 1, v.loc[1] - 1)
                        out.append(((start[0], written_end(reading.lines, start, v.name, analysis.index.syntax)), label))
            for b in op.blocks:
                stack.extend(b.operations)
    return sorted(out)
