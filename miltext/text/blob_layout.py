"""Blob offsets that need no saying: where coremltools puts each weight in a weight file.

coremltools writes a program's blobs one after the other, in program order, each as a 64-byte
record and its data, every record at the next multiple of 64 (miltext.blob_storage). So an
offset follows from the blob before it in the same file and that blob's type: the first blob
of a file is at 64, the next at align(offset + 64 + data bytes). The canonical text writes such
an offset as plain `blob` (`blob("@model_path/weights/other.bin")` for another file) and writes
the number only where the file departs from the layout; an op inserted into a model then changes
its own lines, not the offset of every weight after it. The order is the one the canonical text
writes values in (`values`); the parser fills the offsets back in by the same rule, so the
program's bytes are exactly those it was printed from.
"""
from __future__ import annotations

from .. import dtypes, ops
from ..blob_storage import HEADER_SIZE, RECORD_SIZE, align
from ..ir import Blob, DictData, ListData, StateType, TensorType, TupleData


def data_bytes(vtype) -> int | None:
    """The bytes of data a blob of type `vtype` holds; None when the type does not say."""
    t = vtype.wrapped if isinstance(vtype, StateType) else vtype
    if type(t) is not TensorType or not t.is_static:
        return None
    try:
        bits = dtypes.by_name(t.dtype).bits
    except KeyError:
        return None
    if not bits:
        return None
    return (t.element_count * bits + 7) // 8


class Layout:
    """The offset each weight file's next blob has when the file follows the layout."""
    __slots__ = ("_next",)

    def __init__(self):
        self._next: dict = {}     # file -> the next offset, None when it cannot be known

    def expected(self, file: str) -> int | None:
        return self._next.get(file, HEADER_SIZE)

    def advance(self, blob, vtype) -> None:
        size = data_bytes(vtype)
        self.advance_to(blob.file, None if size is None else align(blob.offset + RECORD_SIZE + size))

    def advance_to(self, file: str, offset: int | None) -> None:
        """The file's next blob is at `offset` (None: not known)."""
        self._next[file] = offset

    def implied(self, blob, vtype) -> bool:
        """Whether `blob` (of a value of type `vtype`) is where the layout puts it; advances."""
        implied = blob.offset == self.expected(blob.file)
        self.advance(blob, vtype)
        return implied


class ImpliedBlob(Blob):
    """`blob` without an offset, as the parser reads it: `fill_in` gives it the offset the
    layout implies (`pos`: where it is written, for an error)."""
    __slots__ = ("pos",)


NOT_IMPLIED = ("this blob's offset does not follow from the blob before it in its file, whose "
               "type has no static size; write the offset, blob(N)")

def values(program):
    """(value, loc) for every value of the program, nested ones after their container, in the
    order the canonical text writes them (values inside types left out)."""
    yield from _attributes(program.attributes, None)
    for name in sorted(program.functions, key=lambda n: (n != "main", n)):
        fn = program.functions[name]
        yield from _attributes(fn.attributes, fn.loc)
        for key in sorted(fn.blocks, key=lambda k: (k != fn.opset, k)):
            yield from _block(fn.blocks[key])


def _block(block):
    yield from _attributes(block.attributes, block.loc)
    for op in block.operations:
        yield from op_values(op)


def op_values(op):
    """(value, loc) for the values of one op and of the blocks it owns, in the text's order."""
    if op.inputs:
        order = ops.input_order(op.type)
        for key in sorted(op.inputs, key=lambda k: (order.get(k, len(order)), k)):
            for b in op.inputs[key]:
                if b is not None and not isinstance(b, str):
                    yield from _value(b, op.loc)
    attrs = op.attributes
    if attrs:
        for key in ("val", "name"):
            if key in attrs:
                yield from _value(attrs[key], op.loc)
        for key in sorted(attrs):
            if key not in ("name", "val"):
                yield from _value(attrs[key], op.loc)
    for inner in op.blocks:
        yield from _block(inner)


def _attributes(attrs: dict, loc):
    for key in sorted(attrs):
        yield from _value(attrs[key], loc)


def _value(value, loc):
    yield value, loc
    data = value.data
    if isinstance(data, (ListData, TupleData)):
        for v in data.values:
            yield from _value(v, loc)
    elif isinstance(data, DictData):
        for pair in data.items:
            for v in pair:
                if v is not None:
                    yield from _value(v, loc)


def fill_in(program, keep_marks: bool = False) -> tuple | None:
    """Give every ImpliedBlob (`blob` without an offset) the offset the layout implies: as a
    plain Blob in its place, or, with `keep_marks`, in the ImpliedBlob itself, which stays so
    that the offsets can be worked out again once the program changes. Returns the place of
    the first one whose offset cannot be implied (the blob before it in its file has a type
    without a static size), else None: the blob's own, or with `keep_marks` (the program read
    in pieces, whose blobs' places are not kept up to date) its op's."""
    layout = Layout()
    for value, loc in values(program):
        blob = value.data
        if not isinstance(blob, Blob):
            continue
        if type(blob) is ImpliedBlob:
            offset = layout.expected(blob.file)
            if offset is None:
                return loc if keep_marks else blob.pos or loc
            if keep_marks:
                blob.offset = offset
            else:
                value.data = blob = Blob(offset, blob.file)
        layout.advance(blob, value.type)
    return None
