"""Model review: two programs compared by structure, not by name (`miltext diff`), and programs
drawn as graphs (`miltext graph`, `miltext diff --graph`).

    from miltext.review import Side, compare
    change = compare(Side.read("Old.mlpackage"), Side.read("New.mlpackage"))
    print(change.text(context=3))      # None-free: "" when the two are the same

`lines` cuts canonical text into lines of names and templates, `align` pairs the lines of two
programs, `weights` reads what blob references point at, `render` writes the text, `graph` the
picture.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .align import CHANGED, align
from .lines import split_lines
from .weights import UNKNOWN, BlobDigests, weight_change


@dataclass
class Side:
    """One program to compare: its canonical text cut into lines, and its weights."""
    label: str
    lines: list
    digests: BlobDigests

    @classmethod
    def read(cls, path: str, label: str | None = None, weights_folder: str | None = None,
             read_weights: bool = True) -> "Side":
        """Any file `miltext print` reads; blobs are looked up in `weights_folder` (default: the
        model's own folder), or not at all without `read_weights`."""
        from ..model.io import read_model
        from ..model.text import model_text
        model = read_model(path)
        folder = (weights_folder or model.folder) if read_weights else None
        return cls(label or path, split_lines(model_text(model)), BlobDigests(folder, path))

    @classmethod
    def from_text(cls, text: str, label: str, folder: str | None = None) -> "Side":
        return cls(label, split_lines(text), BlobDigests(folder, label))

    def close(self) -> None:
        self.digests.close()


class Change:
    """What differs between two Sides."""

    def __init__(self, a: Side, b: Side):
        self.a, self.b = a, b
        self.alignment = align(a.lines, b.lines, a.digests, b.digests)

    @property
    def differs(self) -> bool:
        return self.alignment.differs

    def weight_changes(self) -> list:
        """A WeightChange for each const that holds other numbers, in the new text's order: a
        blob's, or an immediate float tensor's (a b64 one says nothing to a reader)."""
        found = []
        for step in self.alignment.steps:
            if step.tag != CHANGED:
                continue
            old, new = self.a.lines[step.a], self.b.lines[step.b]
            if old.op != "const" or new.op != "const" or len(new.defs) != 1:
                continue
            ids_a, ids_b = self.alignment.blob_ids_a[step.a], self.alignment.blob_ids_b[step.b]
            if len(old.blobs) == 1 and len(new.blobs) == 1 and ids_a != ids_b and UNKNOWN not in ids_a + ids_b:
                found.append(weight_change(new.defs[0], _blob_shape(new.template),
                                           self.a.digests.read(old.blobs[0]), self.b.digests.read(new.blobs[0])))
            elif not old.blobs and not new.blobs:
                change = _immediate_change(old, new)
                if change is not None:
                    found.append(change)
        return found

    def text(self, context: int = 3) -> str:
        from .render import render
        if not self.differs:
            return ""
        return render(self.a.lines, self.b.lines, self.alignment, self.a.label, self.b.label, context,
                      self.weight_changes())


def _immediate_change(old, new):
    """The WeightChange of two const lines holding float tensors of more than one element
    whose numbers differ, else None."""
    values = [_immediate(line) for line in (old, new)]
    if None in values or values[0][0] != values[1][0] or values[1][1].size < 2:
        return None
    change = weight_change(new.defs[0], values[1][2], values[0][:2], values[1][:2])
    return change if change.changed else None


def _immediate(line):
    """(dtype, flat elements, shape) of a const line's float tensor value, or None."""
    from ..errors import ParseError
    from ..ir import TensorType
    from ..text.dialects import parse
    try:
        op = parse(f"main() {{\n  block0() {{\n{line.text}\n  }} -> ()\n}}\n").functions["main"].block.operations[0]
        value = op.attributes["val"]
        if not isinstance(value.type, TensorType) or value.type.dtype not in _FLOATS:
            return None
        array = value.array
    except (ParseError, KeyError, IndexError, TypeError, ValueError):
        return None
    return value.type.dtype, array.reshape(-1), array.shape


_FLOATS = ("fp16", "fp32", "fp64", "bf16", "fp8e4m3fn", "fp8e5m2")


def compare(a: Side, b: Side) -> Change:
    return Change(a, b)


_BLOB_TYPE = re.compile(r"\(([^()]*)\)\x00B")


def _blob_shape(template: str) -> tuple | None:
    """The shape of a const's blob value, from its type as the template spells it."""
    m = _BLOB_TYPE.search(template)
    if not m:
        return None
    dims = m.group(1).split(", ")[:-1]
    return tuple(int(d) if d.isdigit() else d for d in dims)
