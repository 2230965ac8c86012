"""A program's blob values against the weight files they point into: where each file is (never
outside the model folder), whether each blob is there as its type says, and its digest."""
from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ..errors import InputError
from ..files import UnsafePathError, join_inside
from ..ir import Blob, StateType, TensorType
from ..ir.walk import operations
from ..text.blob_layout import values
from .weights import WeightFileError, WeightReader

MODEL_PATH = "@model_path/"


@dataclass
class Reference:
    blob: Blob
    type: object          # the value's type
    loc: tuple | None     # the op (or function, block) it is in, when parsed from text
    value: object = None  # the Value holding the blob


def references(program) -> list[Reference]:
    """Every blob value of the program, in the order its canonical text writes them."""
    return [Reference(v.data, v.type, loc, v) for v, loc in values(program) if isinstance(v.data, Blob)]


def blob_path(folder: str, file_name: str) -> str:
    """The path of blob file `file_name` (`@model_path/weights/weight.bin`) in the model folder
    `folder`; refuses a name that leads outside it."""
    if not file_name.startswith(MODEL_PATH):
        raise UnsafePathError(f"blob file {file_name!r} is not in the model: weight files are named "
                              f"{MODEL_PATH}..., inside the model's folder")
    path = join_inside(folder, file_name[len(MODEL_PATH):])
    if path is None:
        raise UnsafePathError(f"blob file {file_name!r} leads out of the model folder; "
                              "weight files must stay inside it (no '..', no absolute path, no link out)")
    return path


class Weights:
    """The weight files of one model folder, opened as they are asked for."""

    def __init__(self, folder: str | None, source: str | None = None):
        self.folder, self.source = folder, source
        self._readers: dict = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for reader in self._readers.values():
            reader.close()

    def blob_array(self, value, vtype=None):
        """The elements of a blob value (or of the Blob `value` of type `vtype`) read from its
        weight file, in the type's shape when that is static."""
        blob, vtype = (value, vtype) if isinstance(value, Blob) else (value.data, value.type)
        t = vtype.wrapped if isinstance(vtype, StateType) else vtype
        flat = self.reader(blob.file).read(blob.offset)
        return flat.reshape(t.shape) if isinstance(t, TensorType) and t.is_static else flat

    def reader(self, file_name: str) -> WeightReader:
        reader = self._readers.get(file_name)
        if reader is None:
            if self.folder is None:
                raise InputError(f"{self.source}: no model folder to find {file_name} in")
            path = blob_path(self.folder, file_name)
            if not os.path.lexists(path):
                raise WeightFileError(f"{path}: weight file not found (the program refers to {file_name})")
            reader = self._readers[file_name] = WeightReader(path)
        return reader

    def check(self, ref: Reference) -> None:
        """The blob is there, of the dtype and size its type says."""
        t = ref.type.wrapped if isinstance(ref.type, StateType) else ref.type
        dtype = t.dtype if isinstance(t, TensorType) else None
        count = None
        if isinstance(t, TensorType) and t.is_static:
            count = 1
            for d in t.shape:
                count *= d
        reader = self.reader(ref.blob.file)
        try:
            if dtype is None:
                reader.info(ref.blob.offset)
            else:
                reader.expect(ref.blob.offset, dtype, count)
        except WeightFileError as e:
            raise self._located(e, ref) from None

    def check_all(self, program) -> None:
        for ref in references(program):
            self.check(ref)

    def digest(self, blob: Blob) -> str:
        return self.reader(blob.file).digest(blob.offset)

    def _located(self, e: InputError, ref: Reference) -> InputError:
        if ref.loc and self.source:
            return WeightFileError(f"{self.source}:{ref.loc[0]}:{ref.loc[1]}: error: {e}")
        return e


# A blob value as the printer writes it: `blob`, `blob(64)`, `blob("@model_path/weights/o.bin")`
# or `blob("@model_path/weights/o.bin", 64)`.
_BLOB_TEXT = re.compile(r'\(blob(?:\((?:"(?:[^"\\\n]|\\.)*")?(?:, )?[0-9]*\))?\)')


def with_digests(text: str, weights: Weights, program) -> str:
    """`text` (the canonical text of `program`) with `# sha256:1a2b3c4d` after each line that
    refers to blobs, one digest per blob, so that a changed weight shows as a changed line. The
    text may leave offsets out (blob_layout), so the blobs are taken from the program, in the
    order the text writes them."""
    blobs = [v.data for v, _ in values(program) if isinstance(v.data, Blob)]
    lines = text.split("\n")
    at = 0
    for i, line in enumerate(lines):
        if "(blob" not in line:
            continue
        found = len(_BLOB_TEXT.findall(line))
        if found:
            digests = ["sha256:" + weights.digest(b) for b in blobs[at:at + found]]
            at += found
            lines[i] = f"{line}  # {' '.join(digests)}"
    return "\n".join(lines)


def files_to_copy(program, folder: str) -> list[str]:
    """The model's weight files, relative to its folder: everything in `weights/` and every other
    file a blob names."""
    found = set()
    weights_dir = os.path.join(folder, "weights")
    if os.path.isdir(weights_dir):
        for root, dirs, files in os.walk(weights_dir):
            for name in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
                path = os.path.join(root, name)
                if os.path.islink(path):
                    raise UnsafePathError(f"{path} is a link: a model's weight files are its own files")
                found.add(os.path.relpath(path, folder))
    for ref in references(program):
        found.add(os.path.relpath(blob_path(folder, ref.blob.file), folder))
    return sorted(found)


def weights_present(program, folder: str | None) -> bool:
    """Whether every blob file the program names is there (a folder with no blobs has them all)."""
    refs = references(program)
    if refs and folder is None:
        return False
    return all(os.path.isfile(blob_path(folder, f)) for f in {r.blob.file for r in refs})


def replace_const(path: str, name: str, values) -> None:
    """Give the const op `name` of the model at `path` (a `.mil` file with its weights folder,
    or an `.mlpackage`) new values of its dtype and shape, in its weight file, in place."""
    from .io import read_model
    from .weights import replace_blob
    model = read_model(path)
    for op in operations(model.program):
        label = op.attributes.get("name")
        val = op.attributes.get("val")
        if op.type == "const" and label is not None and label.data is not None and \
                list(getattr(label.data, "values", [])) == [name] and val is not None:
            if not isinstance(val.data, Blob):
                raise ValueError(f"{path}: const {name!r} is not in a weight file")
            replace_blob(blob_path(model.folder, val.data.file), val.data.offset, values)
            return
    raise KeyError(f"{path}: no const named {name!r}")

