"""What every family of rules works from: the program walked once, the name resolution, the
source text for exact places, the weight files, and the list the findings go to."""
from __future__ import annotations

from ..ir.scopes import Reference, resolve
from ..ir.walk import blocks, operations
from ..text import lexemes
from .diagnostics import Diagnostic, located, note
from .locate import Locator


class Context:
    def __init__(self, program, source: str | None = None, weights=None, section=None):
        self.program = program
        self.weights = weights          # a weights.WeightFiles, or None: blobs are not checked
        self.section = section          # the text's model section (miltext.text.section_syntax), or None
        self.where = Locator(source)
        self.diagnostics: list[Diagnostic] = []
        self.faulty_ops: set = set()    # ids of ops whose call is wrong (inference skips them)
        self.resolution = resolve(program)
        self.blocks: list = []          # (function name, opset key, block), in program order
        self.ops = _Ops(program)        # (function name, opset key, op), in program order
        for fn_name, fn in program.functions.items():
            for key, top in fn.blocks.items():
                self.blocks.extend((fn_name, key, block) for block in blocks(top))
        self._targets: dict | None = None
        # coremltools' print never shows a const op but always an op's name and output types,
        # and real programs always have consts: a program with none, every op named and typed,
        # was (most likely) read from a print, where consts are dangling names and the dtypes
        # of literals are guesses (1.0 is fp32, 1 is int32). Shorthand leaves names out.
        self.from_print = not any(op.type == "const" for _, _, op in self.ops) and all(
            "name" in op.attributes and all(v.type is not None for v in op.outputs)
            for _, _, op in self.ops)

    # ---- what names refer to ----
    def target(self, site, key: str | None, index: int):
        """The var that binding `index` of input `key` of op `site` refers to, or with key None,
        output `index` of block `site`; None when it refers to nothing."""
        if self._targets is None:  # site -> its references: a few each, so searched in turn
            self._targets = {}
            for r in self.resolution.references:
                self._targets.setdefault(id(r.op if r.op is not None else r.block), []).append(r)
        for r in self._targets.get(id(site), ()):
            if r.key == key and r.index == index:
                return r.target
        return None

    def binding_type(self, op, key: str, index: int):
        """The type of binding `index` of input `key` of `op`: its var's, or its value's."""
        b = op.inputs[key][index]
        if isinstance(b, str):
            b = self.target(op, key, index)
        return b.type if b is not None else None

    def reference_loc(self, ref: Reference) -> tuple | None:
        if ref.op is not None:
            return self.where.reference(ref.op.loc, ref.name, ref.key)
        return self.where.block_output(ref.block.loc, ref.name)

    # ---- findings ----
    # A place is a (line, column) pair, or a function that finds it: finding an exact place
    # costs a search of the source line, paid only for what is reported.
    def error(self, rule: str, loc, message: str, notes=()) -> None:
        self.diagnostics.append(located("error", loc() if callable(loc) else loc, message, rule, notes))

    def warning(self, rule: str, loc, message: str, notes=()) -> None:
        self.diagnostics.append(located("warning", loc() if callable(loc) else loc, message, rule, notes))

    note = staticmethod(note)


class _Ops:
    """(function name, opset key, op) for each op of a program, in program order, made as they
    are walked: kept, they would be a tuple for each op (0.7 MB at 10k ops, while the
    language server checks in the background)."""
    __slots__ = ("program",)

    def __init__(self, program):
        self.program = program

    def __iter__(self):
        for fn_name, fn in self.program.functions.items():
            for key, top in fn.blocks.items():
                for op in operations(top):
                    yield fn_name, key, op


def count(n: int, word: str) -> str:
    """`1 value`, `2 values`."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def var(name: str) -> str:
    """A var name as the text writes it: %x, %"a b"."""
    return lexemes.var(name)
