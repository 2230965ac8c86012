"""The types inference gives a text's untyped outputs, for hover, inlay hints and completion,
worked out op by op when asked and kept from one edit to the next.

Each top-level op's result (its outputs' types and known values) is kept with what it read:
the result of each name it looked up. An op is inferred only when asked for (a hover, a hint)
or read by one that is, and then only again when what it reads changed. Since an op reads only
what is defined before it, an edit cannot change the result of an op above its first changed
line: those stand without a look. Below, an op is looked at again when first asked for after
the edit (what it reads compared by identity, cheap), and inferred again only when a result it
read is not the same; an op inferred again whose result equals the one before keeps that one,
so nothing after it is inferred again. An edit that leaves every result as it was (typing in a
name string, a comment) is not counted as a change at all.

A line that does not parse keeps the results its op last had for the names it seems to declare,
so the rest of the file keeps its types while a call is being typed.
"""
from __future__ import annotations

from bisect import bisect_right

import numpy as np

from ..infer.engine import _declared_only, _infer_op, step
from ..infer.errors import InferenceError
from ..infer.operands import TypeScope, value_array
from ..infer.symbols import concrete, symbolic
from ..ir import Value
from ..ir.types import UnknownType
from .index import read_names

# Edits remembered for telling which kept results still stand; past this, each is looked at again.
MOST_EPOCHS = 1000
# An edit that replaces more op pieces than this is counted as a change without a look.
MOST_COMPARED = 20
_NEVER = 1 << 62


class Result:
    """What one output of an op gives the ops after it: its (symbolic) type, its value when
    known, whether it is a constant. Compared by identity between edits."""
    __slots__ = ("type", "value", "const")

    def __init__(self, t, value, const: bool):
        self.type, self.value, self.const = t, value, const

    def same(self, other: "Result") -> bool:
        return self.const == other.const and _same_type(self.type, other.type) and _same_value(self.value, other.value)


class _Entry:
    __slots__ = ("op", "results", "deps", "epoch", "shown")

    def __init__(self, op):
        self.op, self.results, self.deps, self.epoch, self.shown = op, {}, (), -1, {}


class Types:
    """The inferred types of one reading, from those of the reading before."""

    def __init__(self, analysis, previous: "Types | None" = None):
        reading, index = analysis.reading, analysis.index
        self.reading, self.index = reading, index
        self._blocks = _top_blocks(reading, index)
        self._broken, self._broken_names = _broken_declarers(reading)
        usable = previous is not None and previous._blocks_same(self._blocks) and reading.program is not None
        if not usable:
            self.entries: dict = {}
            self.inputs: dict = {}     # (function, input name) -> Result
            self.last_good: dict = previous.last_good if previous is not None else {}
            self.epoch, self.base, self.since = 0, 0, [_NEVER]
            return
        self.entries, self.inputs, self.last_good = previous.entries, previous.inputs, previous.last_good
        previous.entries = {}
        self.epoch, self.base, self.since = previous.epoch + 1, previous.base, previous.since
        self.since.append(_NEVER)
        if len(self.since) > MOST_EPOCHS:   # forget the old edits: what was looked at then is looked at again
            self.base, self.since = self.epoch, [_NEVER]
        if len(self.last_good) > 2 * len(self.entries) + 1000:
            self.last_good = {}
        replaced = reading.replaced if reading.added is not None else None
        if reading.changed is None:
            self.entries = {}
            return
        first = reading.changed[0]
        if replaced is None:   # read again as a whole (a brace put back): the ops it kept keep their results
            self.entries = reading.of_its_ops(self.entries)
            self._changed_at(first)
            return
        if not self._neutral(replaced, reading.added, previous._broken_names):
            self._changed_at(first)
        for p in replaced:
            for op in p.ops:
                self.entries.pop(id(op), None)

    def _changed_at(self, first: int) -> None:
        """What was looked at before this reading stands above line `first` only."""
        for i in range(len(self.since) - 1):
            if self.since[i] > first:
                self.since[i] = first

    def _neutral(self, replaced: list, added: list, broken_before: dict) -> bool:
        """Whether the ops an edit put in give the names they declare the results the ops it
        took out gave (each, when equal, made the same object): then nothing after them changes."""
        if not self.entries or len(replaced) > MOST_COMPARED or len(added) > MOST_COMPARED:
            return False
        before, after = {}, {}
        for pieces, out, broken in ((replaced, before, broken_before), (added, after, self._broken_names)):
            for p in pieces:
                if p.errors:   # a line that does not parse: the results its names last had
                    out.update((name, self.last_good.get(name)) for name in broken.get(id(p), ()))
                for op in p.ops:
                    entry = self._ensure(op, p)
                    if entry is None:
                        return False
                    out.update(entry.results)
        if before.keys() != after.keys():
            return False
        for p in added:
            for op in p.ops:
                entry = self.entries.get(id(op))
                for name, result in entry.results.items():
                    old = before[name]
                    if old is not None and old is not result and old.same(result):
                        entry.results[name] = self.last_good[name] = old
                        after[name] = old
        return all(before[name] is not None and before[name] is after[name] for name in before)

    def _blocks_same(self, blocks) -> bool:
        return [(b[0], b[2], b[4]) for b in self._blocks] == [(b[0], b[2], b[4]) for b in blocks]

    # ---- questions ----
    def of(self, v, line: int):
        """The inferred (concrete) type of var `v`, an output the text leaves untyped, written
        on `line` (0-based); None when inference cannot tell."""
        piece = self._piece_at(line)
        if piece is None:
            return None
        for op in piece.ops:
            entry = self._ensure(op, piece)
            if entry is not None and id(v) in entry.shown:
                return entry.shown[id(v)]
        return None

    # ---- the work ----
    def _piece_at(self, line: int):
        starts = self.index._piece_starts
        i = bisect_right(starts, line) - 1
        pieces = self.reading.pieces
        return pieces[i] if i >= 0 and line < pieces[i].end and pieces[i].ops else None

    def _fresh(self, entry: _Entry, line: int) -> bool:
        if entry.epoch == self.epoch:
            return True
        if entry.epoch >= self.base and line < self.since[entry.epoch - self.base]:
            entry.epoch = self.epoch
            return True
        return False

    def _ensure(self, op, piece) -> _Entry | None:
        """The entry of a top-level op, made or checked for this reading, with those of the ops
        it reads first (a loop, not recursion: a chain of ops is as long as the text)."""
        block = self._block_of(piece.start)
        if block is None:
            return None
        todo = [(op, piece)]
        while todo:
            op, piece = todo[-1]
            entry = self.entries.get(id(op))
            if entry is not None and self._fresh(entry, piece.start):
                todo.pop()
                continue
            waiting = False
            for name in _names_read(op):
                found = self._source(name, piece)
                if found is not None and found[0] == "op":
                    _, src_op, src_piece = found
                    src = self.entries.get(id(src_op))
                    if src is None or not self._fresh(src, src_piece.start):
                        todo.append((src_op, src_piece))
                        waiting = True
            if waiting:
                continue
            todo.pop()
            self._settle(op, piece, entry)
        return self.entries.get(id(op))

    def _settle(self, op, piece, entry: _Entry | None) -> None:
        """Check an op's entry against what it reads now, or infer it (the ops it reads are
        settled already)."""
        if entry is not None and all(self._lookup(name, piece) is result for name, result in entry.deps):
            entry.epoch = self.epoch
            return
        block = self._block_of(piece.start)
        new = _Entry(op)
        outer = _Outer(self, piece)
        scope = TypeScope(outer)
        step(op, block[2], scope, _visit(new.shown))
        new.deps = tuple(outer.read.items())
        for v in op.outputs:
            name = v.name
            if name not in scope.types:
                continue
            result = Result(scope.types[name], scope.values.get(name), name in scope.consts)
            old = entry.results.get(name) if entry is not None else None
            new.results[name] = old if old is not None and old.same(result) else result
            self.last_good[name] = new.results[name]
        new.epoch = self.epoch
        self.entries[id(op)] = new

    def _block_of(self, line: int):
        i = bisect_right(self._blocks, (line, _NEVER)) - 1
        if i >= 0 and line <= self._blocks[i][1]:
            return self._blocks[i]
        return None

    def _source(self, name: str, piece):
        """What `name` refers to read by the op of `piece`: ("op", op, its piece), ("ghost",
        Result) for a line that does not parse, ("input", Result), or None."""
        block = self._block_of(piece.start)
        if block is None:
            return None
        lo = block[0]
        best = None
        for p in _pieces(self.index.declaring.get(name, ())):
            if lo <= p.start < piece.start and (best is None or p.start > best.start):
                for op in reversed(p.ops):
                    if any(v.name == name for v in op.outputs):
                        best = p
                        break
        ghost = None
        for start in self._broken.get(name, ()):
            if lo <= start < piece.start and start > (best.start if best is not None else -1):
                ghost = start
        if ghost is not None:
            found = self.last_good.get(name)
            return None if found is None else ("ghost", found)
        if best is not None:
            for op in reversed(best.ops):
                if any(v.name == name for v in op.outputs):
                    return "op", op, best
        fn = block[3]
        for v in fn.inputs:
            if v.name == name:
                key = (block[4], name)
                kept = self.inputs.get(key)
                if kept is None or not _same_type(kept[0], v.type):
                    kept = self.inputs[key] = (v.type, Result(symbolic(v.type), None, False))
                return "input", kept[1]
        return None

    def _lookup(self, name: str, piece) -> Result | None:
        found = self._source(name, piece)
        if found is None:
            return None
        if found[0] != "op":
            return found[1]
        entry = self.entries.get(id(found[1]))
        return None if entry is None else entry.results.get(name)


class _Table:
    """One of a TypeScope's tables (types, values, consts) for the names an op reads from
    outside it, each found where the op stands."""
    __slots__ = ("outer", "field")

    def __init__(self, outer: "_Outer", field: str):
        self.outer, self.field = outer, field

    def __contains__(self, name) -> bool:
        found = self.outer.result(name)
        if found is None:
            return False
        return found.value is not None if self.field == "value" else found.const if self.field == "const" else True

    def __getitem__(self, name):
        return getattr(self.outer.result(name), self.field)

    def __setitem__(self, name, value) -> None:   # a const's Value read as numpy: kept so
        found = self.outer.result(name)
        if found is not None:
            found.value = value


class _Outer:
    """The parent scope of an op being inferred: the results of the names it reads, recorded."""

    def __init__(self, types: Types, piece):
        self.types_of, self.piece, self.read = types, piece, {}
        self.parent = None
        self.types, self.values, self.consts = _Table(self, "type"), _Table(self, "value"), _Table(self, "const")

    def result(self, name: str) -> Result | None:
        if name in self.read:
            return self.read[name]
        found = self.read[name] = self.types_of._lookup(name, self.piece)
        return found


def _visit(shown: dict):
    """The walk's visit for the server: an op whose outputs are left untyped is inferred, its
    types kept in `shown` (by id of var); one inference cannot type is given up on, its
    outputs unknown, and the ops after it go on."""
    def visit(op, operands):
        if all(v.type is not None for v in op.outputs):
            return _declared_only(op, operands)
        try:
            types, _ = _infer_op(op, operands, False)
        except InferenceError:
            types = None
        if types is None or len(types) != len(op.outputs):
            return [UnknownType() if v.type is None else v.type for v in op.outputs]
        for v, t in zip(op.outputs, types):
            if v.type is None:
                shown[id(v)] = concrete(t)
        return types
    return visit


class _One:
    """An op as a piece holding it alone (what index.read_names reads)."""
    __slots__ = ("ops",)

    def __init__(self, op):
        self.ops = (op,)


def _names_read(op) -> set:
    """The names an op (with its blocks) reads."""
    return read_names(_One(op))


def _pieces(found) -> tuple:
    return found if type(found) is tuple else (found,)


def _top_blocks(reading, index) -> list:
    """(first line, last line, opset, function, its name) of each function's blocks, in text order."""
    program = reading.program
    out = []
    if program is None:
        return out
    for name, fn in program.functions.items():
        for key, block in fn.blocks.items():
            if block.loc:
                first = block.loc[0] - 1
                out.append((first, index._block_end(first), key, fn, name))
    out.sort(key=lambda b: b[0])
    return out


def _broken_declarers(reading) -> tuple:
    """(name -> the first lines of the op pieces that do not parse and seem to declare it,
    id(piece) -> those names)."""
    out: dict = {}
    names: dict = {}
    for p in reading.pieces:
        if p.errors:
            names[id(p)] = reading.seemingly_declared(p)
            for name in names[id(p)]:
                out.setdefault(name, []).append(p.start)
    return out, names


def _same_type(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, UnknownType) and isinstance(b, UnknownType):
        return True
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _same_value(a, b) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    x = value_array(a) if isinstance(a, Value) else a
    y = value_array(b) if isinstance(b, Value) else b
    if isinstance(x, np.ndarray) and isinstance(y, np.ndarray):
        return x.dtype == y.dtype and x.shape == y.shape and bool(np.array_equal(x, y))
    try:
        return bool(type(a) is type(b) and a == b)
    except (TypeError, ValueError):
        return False
