"""A text as the language server reads it, again after each edit: its frame (see layout) parsed
as a whole with every op line blanked out, each op parsed on its own, and the ops put into the
frame's blocks. An op whose lines did not change since the last reading is not parsed again;
when lines were added or taken out above it, its places move with it. An op that does not
parse is left out with its errors, and the rest of the program stands.

When the frame itself does not parse (a broken header), the whole text is parsed as `check`
would, so no error is hidden and none is made up.
"""
from __future__ import annotations

from bisect import bisect_right

from ..errors import ParseError
from ..ir import Blob, WeightRef
from ..ir.compact import Compacting, compact
from ..model import Model
from ..model.section import SectionError, spec_from_section
from ..text import blob_layout, dialects
from .document_text import Lines
from .pieces import Layout, Piece

# How the server reads: its ops compact (it holds every open text), the offsets of blobs written
# without one left for _fill_in_blobs to work out over the whole program.
EDITING = dialects.ReadOptions(op_factory=compact, resolve_blob_offsets=False)


def editing_whole() -> dialects.ReadOptions:
    """EDITING for a whole text read at once: its ops share their small tensor values (see
    ir.compact.Compacting; an op parsed again on its own does not need to)."""
    return dialects.ReadOptions(op_factory=Compacting(), resolve_blob_offsets=False)

# More new ops than this: parse the text as a whole first (opening a file, pasting much).
WHOLE_AFTER = 200


class OpPiece(Piece):
    """One op's lines (a piece of the layout) and what parsing them gave: its ops (one, with
    the blocks it owns) or its errors ((line, column, message), 1-based), placed where the
    piece starts once a reading is made (see _settle). Its text is not kept: it is the
    reading's lines of the piece. One object per op of the text, so it is kept small: a single
    op is kept as itself, not in a tuple. `refs` are its weight references (npy(...),
    safetensors(...)), whose places move with it too. `outline` is what its op's outline
    symbol needs that is slow to find (see outline.Outlines)."""
    __slots__ = ("_ops", "errors", "refs", "outline")

    def __init__(self, start: int, end: int, unclosed: tuple | None = None):
        super().__init__(start, end, unclosed)
        self._ops, self.errors, self.refs, self.outline = (), (), (), None

    @property
    def ops(self) -> tuple:
        found = self._ops
        return found if type(found) is tuple else (found,)

    @ops.setter
    def ops(self, ops) -> None:
        ops = tuple(ops)
        self._ops = ops[0] if len(ops) == 1 else ops

    def took(self, other: "OpPiece") -> None:
        """Take what parsing another piece of the same text gave (placed where `other` starts)."""
        self._ops, self.errors, self.refs, self.outline = other._ops, other.errors, other.refs, other.outline


class OpLayout(Layout):
    piece = OpPiece


class Reading:
    """One reading of a text: `program` (None when even the frame does not parse), `model`,
    `errors` (line, column, message; 1-based, in text order), and the op pieces."""

    def __init__(self, text: str, previous: "Reading | None" = None):
        self.text = text
        self.lines = Lines(text)
        self.dialect = dialects.detect(text)
        self.modelmil = self.dialect is dialects.MODELMIL
        self.raw = self.dialect is dialects.COREMLTOOLS
        same_kind = previous is not None and previous.by_pieces and \
            (previous.modelmil, previous.raw) == (self.modelmil, self.raw)
        self.memo = previous.memo if same_kind else {}
        if len(self.memo) > 4 * len(self.lines) + 1000:
            self.memo = {}
        self.replaced = self.added = None   # the previous pieces replaced and the new ones
        self.kept = False   # whether this reading is the one before with another frame error
        self.layout_lines = self.lines   # the lines the layout and pieces are of (a kept reading's: those before)
        if same_kind:
            self.changed = changed_lines(previous.layout_lines, self.lines)
            if self._keeps(previous):
                return
            self.layout = previous.layout.updated(previous.layout_lines, self.lines, *self.changed)
        else:
            self.changed = None
            self.layout = OpLayout(self.lines, "modelmil" if self.modelmil else "mil", self.memo)
        self.reparsed = 0
        self.model = self.program = None
        self.errors: list = []
        self.pieces: list[OpPiece] = []
        self.by_pieces = self._read_frame(previous if same_kind else None)   # else read as a whole
        if self.by_pieces:
            self.pieces = self._ops(previous.pieces, previous.layout_lines) if same_kind else self._ops([], None)
            self._assemble()
            self._fill_in_blobs(previous if same_kind else None)
        else:
            self._whole()   # the ops are not parsed one by one: the whole text is

    def _keeps(self, previous: "Reading") -> bool:
        """An edit of frame lines only, moving no line, after which the frame does not parse (a
        `}` deleted, a header being typed): the reading before stands, ops, program and all,
        with the frame's first error (those after it follow from it) in place of its own."""
        first, end_old, end_new = self.changed   # from the lines of the layout before
        if end_old != end_new or end_old == first or not previous.by_pieces or previous.program is None \
                or not all(previous.layout.is_frame(n) for n in range(first, end_old)):
            return False
        skeleton = previous.skeleton.split("\n")
        skeleton[first:end_old] = [self.lines[n] for n in range(first, end_old)]
        skeleton = "\n".join(skeleton)
        try:
            dialects.parse(skeleton, with_model=True)
            return False   # it parses: read as usual
        except ParseError as e:
            failed = e
        error = (failed.errors or [(failed.line, failed.column, failed.message)])[0]
        for name in ("layout", "layout_lines", "memo", "pieces", "program", "model", "section", "frame_program",
                     "frame_texts", "blob_error", "by_pieces", "skeleton", "frame_error"):
            setattr(self, name, getattr(previous, name))
        self.kept = True
        self.replaced, self.added, self.reparsed = [], [], 0
        self.errors = sorted([error] + [x for p in self.pieces if p.errors for x in p.errors] +
                             ([self.blob_error] if self.blob_error is not None else []))
        return True

    def _ops(self, before: list[OpPiece], previous_lines: Lines | None) -> list[OpPiece]:
        """The pieces of the layout, each with its ops: those the layout kept (moved with
        it), those of the same text as a piece before, or a new parse."""
        if self.layout.kept is not None:  # the layout kept all but a few pieces: so do we
            i, n, k = self.layout.kept
            window = self.layout.pieces[i:i + n]
            self.replaced = before[i:k]
            made = self._made(window, before[i:k], previous_lines)
            moved = self.changed[2] - self.changed[1]
            if moved:   # lines were added or taken out: the layout moved the pieces after
                for p in before[k:]:
                    _settle(p, moved)
            self.added = made
            return self.layout.pieces   # before[:i] + made + before[k:], in one list for both
        self.replaced, self.added = before, None
        return self._made(self.layout.pieces, before, previous_lines)

    def _made(self, pieces: list[OpPiece], before: list[OpPiece], before_lines: Lines | None) -> list[OpPiece]:
        """`pieces`, each with its ops; `before` are the pieces they may be (kept by the
        layout) or be of the same text as."""
        still = {id(piece) for piece in pieces}
        cached: dict[str, list[OpPiece]] = {}
        for p in before:   # the previous pieces that are not in the layout any more, by text
            if id(p) not in still:
                cached.setdefault(before_lines.span(p.start, p.end), []).append(p)
        was = {id(p) for p in before}
        fresh = [piece for piece in pieces if id(piece) not in was]
        # the text of each new piece, to find it among the previous ones (when there are any:
        # opening a text, this would be a second copy of it, in small pieces among the ops)
        texts = {id(piece): self.lines.span(piece.start, piece.end) for piece in fresh} if cached else {}
        new = sum(1 for piece in fresh if not cached.get(texts[id(piece)])) if cached else len(fresh)
        whole = self._whole_ops() if new > WHOLE_AFTER else None
        refs = whole is not None and _may_refer(self.text)
        for piece in pieces:
            if id(piece) in was:   # kept: its ops are where they were (_ops moves them with it)
                continue
            text = texts.get(id(piece))
            found = cached.get(text) if text is not None else None
            if found:
                other = found.pop()   # not moved by the layout: where its ops are
                piece.took(other)
                _settle(piece, piece.start - other.start)
            elif whole is not None:
                piece.ops = whole.get(piece.start, ())
                if refs:
                    piece.refs = _refs_of(piece)
            else:
                self._parse_op(text if text is not None else self.lines.span(piece.start, piece.end), piece)
                self.reparsed += 1
        return pieces

    def _whole_ops(self) -> dict | None:
        """The ops of the whole text by the line each starts on, when it parses as a whole
        (one parse is quicker than one per op)."""
        from ..model.text import parse_model
        try:
            model = parse_model(self.text, options=editing_whole())
        except (ParseError, SectionError):
            return None
        self.reparsed = len(self.layout.pieces)
        starts = {p.start for p in self.layout.pieces}
        by_line: dict = {}
        for fn in model.program.functions.values():
            for block in fn.blocks.values():
                for op in block.operations:
                    line = self._op_line(op)
                    if line in starts:
                        by_line.setdefault(line, []).append(op)
        return by_line

    @staticmethod
    def _op_line(op) -> int | None:
        """The line an op's piece starts on (0-based): its first output's (model.mil places
        an op at its type, after the outputs), or its own."""
        loc = op.outputs[0].loc if op.outputs and op.outputs[0].loc else op.loc
        return None if loc is None else loc[0] - 1

    def _parse_op(self, text: str, piece: OpPiece) -> None:
        """Parse one op's lines where they stand: at the top of a small text, then moved."""
        if piece.unclosed is not None:
            line, column, bracket = piece.unclosed
            piece.errors = [(line + 1, column + 1, f"this {bracket!r} is never closed")]
            return
        first = 0   # the line (0-based) the op text starts on
        try:
            piece.ops = dialects.parse_fragment(text, "ops", dialect=self.dialect, options=EDITING)
            if _may_refer(text):
                piece.refs = _refs_of(piece)
        except ParseError as e:
            last = first + piece.end - piece.start   # 1-based, the op's last line
            piece.errors = [(min(line, last), column if line <= last else len(text.split("\n")[-1]) + 1, message)
                            for line, column, message in (e.errors or [(e.line, e.column, e.message)])]
        _settle(piece, piece.start - first)

    def _read_frame(self, previous: "Reading | None") -> bool:
        """Parse the frame (the text with its op lines blank); whether it parses."""
        frame = [""] * len(self.lines)
        for n in self.layout.frame:
            frame[n] = self.lines[n]
        skeleton = "\n".join(frame)
        self.frame_texts = [self.lines[n] for n in self.layout.frame if self.lines[n].strip()]
        if previous is not None and previous.skeleton == skeleton and previous.frame_error is None:
            section, program = previous.section, previous.frame_program
        else:
            try:
                section, program = dialects.parse(skeleton, with_model=True)
            except ParseError as e:
                section = program = None
                self.frame_error = e
        self.skeleton, self.section, self.frame_program = skeleton, section, program
        if program is not None:
            self.frame_error = None
        return program is not None

    def _assemble(self) -> None:
        """The ops put into the frame's blocks, and the errors of those that do not parse."""
        section, program = self.section, self.frame_program
        blocks = sorted((b.loc[0] - 1, b) for fn in program.functions.values() for b in fn.blocks.values() if b.loc)
        starts = [line for line, _ in blocks]
        for _, b in blocks:
            b.operations = []
        errors = [(line + 1, column + 1, "this '{' is never closed") for line, column, _ in self.layout.unclosed_braces]
        errors += [e for p in self.pieces if p.errors for e in p.errors]
        pieces = self.pieces
        bounds = [bisect_right(pieces, line, key=lambda p: p.start) for line in starts] + [len(pieces)]
        for (_, block), first, end in zip(blocks, bounds, bounds[1:]):
            block.operations = [op for p in pieces[first:end] for op in
                                ((p._ops,) if type(p._ops) is not tuple else p._ops)]  # p.ops, quicker
        self.program = program
        self.errors = sorted(errors)
        spec = None
        if section is not None:
            try:
                spec = spec_from_section(section, program)
            except SectionError as e:
                self.errors.append((*(e.loc or (1, 1)), str(e)))
        self.model = Model(program, spec, None)

    def _fill_in_blobs(self, previous: "Reading | None") -> None:
        """The offsets of the blobs written without one (`blob`), each of which follows from every
        blob before it in the program: worked out over the whole program for a new reading or an
        edit that touched a blob, else as the reading before left them (in the same objects)."""
        self.blob_error = None
        if self.program is None or self.modelmil:   # model.mil writes every offset
            return
        if previous is not None and self.added is not None and self.frame_program is previous.frame_program \
                and not any(_has_blob(p) for p in (*self.replaced, *self.added)):
            self.blob_error = previous.blob_error
        else:
            at = blob_layout.fill_in(self.program, keep_marks=True)
            self.blob_error = None if at is None else (*at, blob_layout.NOT_IMPLIED)
        if self.blob_error is not None:
            self.errors = sorted(self.errors + [self.blob_error])

    def of_its_ops(self, kept: dict) -> dict:
        """Those of `kept` (what was worked out for top-level ops, by id of the op, each holding
        its op) whose op is one of this reading's: a text read again as a whole keeps the ops
        whose text is the same."""
        alive = {id(op) for p in self.pieces for op in p.ops}
        return {key: found for key, found in kept.items() if key in alive}

    def broken_names(self) -> set:
        """The names the ops that do not parse seem to declare."""
        return {name for p in self.pieces if p.errors for name in self.seemingly_declared(p)}

    def seemingly_declared(self, p: OpPiece) -> list:
        """The names an op piece that does not parse seems to declare (before its `=`; with no
        `=` yet, those it writes: `%y: (` is an op being typed)."""
        from .index import _tokens, syntax_of
        text = self.lines.span(p.start, p.end)
        head = text.split("=", 1)[0]
        return [name for name, _, _ in _tokens(head, syntax_of(self))]

    def _whole(self) -> None:
        """The frame does not parse: read the text as a whole for its errors (and a program,
        should it parse after all)."""
        from ..model.text import parse_model
        try:
            self.model = parse_model(self.text, options=editing_whole())
            self.program = self.model.program
        except ParseError as e:
            self.errors = list(e.errors or [(e.line, e.column, e.message)])
        self._fill_in_blobs(None)


def changed_lines(old, new) -> tuple[int, int, int]:
    """(first, end in old, end in new): the lines outside [first, end) are the same in both
    (lists of lines, or Lines)."""
    if isinstance(old, Lines) and isinstance(new, Lines) and len(old) == len(new):
        found = _one_line_longer_or_shorter(old, new)
        if found is not None:
            return found
    old, new = (lines.text.split("\n") if isinstance(lines, Lines) else lines for lines in (old, new))
    most = min(len(old), len(new))
    first = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), most)
    last = next((i for i, (a, b) in enumerate(zip(reversed(old), reversed(new))) if a != b or i >= most - first),
                most - first)
    return first, len(old) - last, len(new) - last


def _one_line_longer_or_shorter(old: Lines, new: Lines) -> tuple[int, int, int] | None:
    """What changed_lines says when the texts differ in one line only, which is longer or
    shorter than it was (typing): found from the line offsets and two comparisons of the texts
    around that line, without cutting either text into lines. None otherwise."""
    a, b = old.starts, new.starts
    if a == b:
        return None
    lo, hi = 1, len(a)   # the first lo offsets are the same, the first hi are not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid
    line = lo - 1         # the line before the first moved one changed length
    if old.text[:a[line]] != new.text[:b[line]] or old.text[a[lo]:] != new.text[b[lo]:]:
        return None
    return line, lo, lo


def _has_blob(p: OpPiece) -> bool:
    return any(isinstance(v.data, Blob) for op in p.ops for v, _ in blob_layout.op_values(op))


def _may_refer(text: str) -> bool:
    """Whether a text may hold a weight reference."""
    return "npy(" in text or "safetensors(" in text


def _refs_of(p: OpPiece) -> tuple:
    """The weight references in a piece's ops."""
    return tuple(v.data for op in p.ops for v, _ in blob_layout.op_values(op) if isinstance(v.data, WeightRef))


def _settle(p: OpPiece, lines: int) -> None:
    """Move an op piece's places by `lines`, to where the piece now stands."""
    if not lines:
        return
    if p.errors:
        p.errors = [(line + lines, column, message) for line, column, message in p.errors]
    moved: dict = {}   # an op and its output share one place: the moved one is shared too

    def move(loc):
        if not loc:
            return loc
        found = moved.get(loc)
        if found is None:
            found = moved[loc] = (loc[0] + lines, loc[1])
        return found

    for ref in p.refs:
        ref.loc, ref.tensor_loc = move(ref.loc), move(ref.tensor_loc)
    stack = list(p.ops)
    while stack:
        op = stack.pop()
        op.loc = move(op.loc)
        for v in op.outputs:
            v.loc = move(v.loc)
        for b in op.blocks:
            b.loc = move(b.loc)
            for v in b.inputs:
                v.loc = move(v.loc)
            stack.extend(b.operations)
