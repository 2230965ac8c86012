"""check's findings for the text being edited, again after each edit without checking the
whole program again.

A full check is worth keeping: after an edit, its findings outside the lines that changed
stand (moved with their lines). What the edit can change is the findings of the ops it
touched, of the ops that read a name those ops declare (or declared), of the ops declaring such
a name too, and of the frame (block outputs). Those are checked again in a program made of
them and of the ops that declare what they read, in text order, within the same functions and
blocks; only the findings on their own lines are taken from it. The server runs a full check
again when the typing stops, so nothing this leaves out stays.
"""
from __future__ import annotations

import re
from bisect import bisect_right

import miltext

from ..ir import Block, Function, Program
from .document import changed_lines
from .index import declared_names, read_names

# More ops than this to check again: check the whole program.
MOST_AFFECTED = 300
# Findings whose "did you mean" depends on every name in scope: the part checked has only some,
# so these are worded again from the names index (see _reworded).
UNDEFINED = {"undefined-name": "{}", "undefined-output": "block output {}"}
_MEANT = re.compile(r"; did you mean (.+)\?\Z", re.S)


class Files:
    """Where a text's files are, for check: the text's own path (its weight references are
    relative to its folder, and confined to it), the weights folder beside it, and the weight
    files' headers the server keeps for its session (each parsed once while it stays the same)."""
    __slots__ = ("path", "weights", "headers")

    def __init__(self, path: str | None = None, weights: str | None = None, headers=None):
        self.path, self.weights, self.headers = path, weights, headers


def full(program, text: str, files: Files | None = None, section=None) -> list:
    """check's findings on the whole program, the model section (when the text has one) too."""
    files = files or Files()
    return miltext.check(program, source=text, weights=files.weights, section=section, filename=files.path,
                         confine_refs=True, ref_headers=files.headers)


def incremental(before_index, index, diagnostics: list, files: Files | None = None,
                broken: set = frozenset()) -> list | None:
    """The diagnostics of the reading of `index` from `diagnostics`, those of the reading
    of `before_index` (check's, 1-based lines), or None when only a full check will do.
    `broken`: the names lines that do not parse seem to declare (their uses are no finding:
    see echo)."""
    before, reading = before_index.reading, index.reading
    if reading.kept:   # the same program as before: the same findings
        return diagnostics
    if reading.program is None or before.program is None or reading.frame_texts != before.frame_texts:
        return None
    first, end_old, end_new = reading.changed or changed_lines(before.lines, reading.lines)
    delta = end_new - end_old
    pieces = reading.pieces
    starts = index._piece_starts
    lo = max(bisect_right(starts, first) - 1, 0)
    touched = {i for i in range(lo, bisect_right(starts, max(end_new - 1, first)))
               if pieces[i].end > first and pieces[i].start < max(end_new, first + 1)}
    names = set()
    for i in touched:
        names.update(declared_names(pieces[i]))
    added = set(names)   # what the changed ops declare now
    gone = reading.replaced if reading.added is not None else \
        [p for p in before.pieces if p.end > first and p.start < end_old]
    for p in gone:  # what the changed ops declared before the edit
        names.update(declared_names(p))
    affected = set(touched)
    for name in names:
        for o in index.occurrences_of(name):
            i = bisect_right(starts, o.start[0]) - 1
            if i >= 0 and o.start[0] < pieces[i].end:
                affected.add(i)
    if len(affected) > MOST_AFFECTED:
        return None
    # the ops declaring what the affected ones (and the frame) read
    needed = set(affected)
    read = set()
    for i in affected:
        read.update(read_names(pieces[i]))
    for n in reading.layout.frame:
        read.update(name for name, *_ in _frame_names(reading, index, n))
    for name in read:
        for d in index.decls_of(name):
            i = bisect_right(starts, d.start[0]) - 1
            if i >= 0 and d.start[0] < pieces[i].end:
                needed.add(i)
    for i, p in enumerate(pieces):  # one const, as the whole program has: check reads a
        if any(op.type == "const" for op in p.ops):  # program without any as a print
            needed.add(i)
            break
    if len(needed) > 3 * MOST_AFFECTED:
        return None
    lines_of = set(reading.layout.frame)
    for i in affected:
        lines_of.update(range(pieces[i].start, pieces[i].end))
    changed = (names, added, before_index.nearest)
    fresh = [_reworded(d, index, changed, kept=False) if d.rule in UNDEFINED else d
             for d in full(_part(reading, sorted(needed)), reading.text, files)
             if d.line is not None and d.line - 1 in lines_of and not echo(d, broken)]
    if any(d is None for d in fresh):
        return None
    kept = []
    for d in diagnostics:
        if d.line is None:
            kept.append(d)
            continue
        line = d.line - 1
        if line >= end_old:
            line += delta
        elif line >= first:
            continue
        if line in lines_of:
            continue
        d = _moved(d, line + 1 - d.line, end_old, delta)
        if d.rule in UNDEFINED and names:   # names came or went: another may be nearest now
            d = _reworded(d, index, changed)
            if d is None:
                return None
        kept.append(d)
    return sorted(kept + fresh, key=lambda d: (d.line is None, d.line or 0, d.column or 0))


def _reworded(d, index, changed: tuple, kept: bool = True):
    """An undefined name's finding with the "did you mean" a whole check gives: the nearest of
    every name visible where it is used (None when the name is not found at its place). The
    finding comes from a part of the program, or (`kept`) from before the edit. `changed`: the
    names the edit touched, those of them declared now, and the index before's `nearest`.

    The nearest of a set is the nearer of the nearest of any two parts of it, so what an edit
    did not change is not looked at again: the nearest of the names other than those the
    typing touches is kept in the index (`nearest`, for the next edit), and a kept finding's
    suggestion stands unless a name declared now is nearer, or it went. (A name used before its
    definition, or out of its scope, reads the same from a part: it holds every declaration of
    each name its ops read.)"""
    from dataclasses import replace

    from ..checker.context import var
    from ..checker.suggest import closest, did_you_mean
    from ..text.lexemes import var_name
    place = (d.line - 1, (d.column or 1) - 1)
    used = index.at(place)
    if used is None or used.declares:
        return None
    names, added, before = changed
    key = (used.name, place)
    said = _MEANT.search(d.message)
    was = var_name(said.group(1)) if said else None
    found = before.get(key)
    if found is not None and names <= found[0] | added and found[1] not in added:
        apart, nearest = found[0] | added, found[1]   # names outside `apart` are as they were
    elif kept and (was is None or was not in names or index.sees(was, place)):
        apart, nearest = added, was
    else:
        apart = added
        nearest = closest(used.name, [n for n in index.visible_names(place) if n not in apart])
    if found is not None or not kept or nearest is not was:
        index.nearest[key] = (frozenset(apart), nearest)
    known = [n for n in apart if index.sees(n, place)] + ([nearest] if nearest is not None else [])
    meant = did_you_mean(used.name, known, spell=var)
    return replace(d, message=UNDEFINED[d.rule].format(var(used.name)) + " is not defined" + meant)


def echo(d, broken: set) -> bool:
    """Whether a finding is `x is not defined` for a name a line that does not parse declares:
    that line's error says it all."""
    if not broken or d.rule not in ("undefined-name", "undefined-output"):
        return False
    from ..text.lexemes import var_name
    named = re.search(r"(\S+) is not defined", d.message)   # "[block output] %x is not defined"
    named = named.group(1) if named else ""
    return (var_name(named) if named.startswith("%") else named) in broken


def _moved(d, by: int, end_old: int, delta: int):
    if not by and not d.notes:
        return d
    from dataclasses import replace
    notes = [replace(n, line=n.line + delta) if n.line is not None and n.line - 1 >= end_old else n for n in d.notes]
    return replace(d, line=d.line + by, notes=notes)


def _frame_names(reading, index, line: int):
    from .index import _tokens
    return _tokens(reading.lines[line], index.syntax)


def _part(reading, chosen: list[int]) -> Program:
    """The program's frame with only the ops of the chosen pieces, in text order."""
    program = reading.program
    copies, top = {}, []
    out = Program(version=program.version, functions={}, attributes=program.attributes, doc=program.doc)
    for name, fn in program.functions.items():
        blocks = {}
        for key, b in fn.blocks.items():
            blocks[key] = copies[id(b)] = Block(inputs=b.inputs, outputs=b.outputs, attributes=b.attributes, loc=b.loc)
            if b.loc:
                top.append((b.loc[0] - 1, id(b)))
        out.functions[name] = Function(inputs=fn.inputs, opset=fn.opset, blocks=blocks,
                                       attributes=fn.attributes, loc=fn.loc)
    top.sort()
    starts = [line for line, _ in top]
    for i in chosen:
        p = reading.pieces[i]
        j = bisect_right(starts, p.start) - 1
        if j >= 0:
            copies[top[j][1]].operations.extend(p.ops)
    return out
