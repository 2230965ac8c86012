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
        """A WeightChange for each const whose blob holds other numbers, in the new text's order."""
        found = []
        for step in self.alignment.steps:
            if step.tag != CHANGED:
                continue
            old, new = self.a.lines[step.a], self.b.lines[step.b]
            ids_a, ids_b = self.alignment.blob_ids_a[step.a], self.alignment.blob_ids_b[step.b]
            if new.op != "const" or not new.defs or len(old.blobs) != 1 or len(new.blobs) != 1 \
                    or ids_a == ids_b or UNKNOWN in ids_a + ids_b:
                continue
            found.append(weight_change(new.defs[0], _blob_shape(new.template),
                                       self.a.digests.read(old.blobs[0]), self.b.digests.read(new.blobs[0])))
        return found

    def text(self, context: int = 3) -> str:
        from .render import render
        if not self.differs:
            return ""
        return render(self.a.lines, self.b.lines, self.alignment, self.a.label, self.b.label, context,
                      self.weight_changes())


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
