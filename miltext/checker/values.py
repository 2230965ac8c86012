"""Types and values: a rank equals the number of dims, a value holds as many elements as its
shape says, in the form its dtype is stored in, of the type it is declared with; a blob points
at a blob of that type in the weight file, when the file is at hand."""
from __future__ import annotations

import os
from functools import partial

from .. import dtypes
from ..ir import Blob, DictData, DictType, Elided, EmptyImmediate, ListData, ListType, StateType, TensorData, TensorType, TupleData, TupleType, WeightRef
from ..ir.values import decode_tensor
from ..model.weights import WeightFileError
from .compat import compatible, describe
from .context import Context, var

RULES = {
    "rank-mismatch": "error",   # a tensor type whose rank is not its number of dims
    "element-count": "error",   # a value with more or fewer elements than its type holds
    "value-dtype": "error",     # elements in another field than their dtype's, or not fitting it
    "value-type": "error",      # a value of another type than declared (const output, container element)
    "elided-value": "error",    # a value left out as [...]
    "missing-weight-file": "warning",  # the weight file a blob names is not at hand
    "weight-file": "error",     # the file a blob names is not the model's own, or not a weight file
    "blob-range": "error",      # a blob offset where the weight file has no blob
    "blob-mismatch": "error",   # a blob of another dtype or size than its value's type
}


def check(ctx: Context) -> None:
    checker = _Values(ctx)
    program = ctx.program
    for v in program.attributes.values():
        checker.value(v, None)
    for fn in program.functions.values():
        for v in fn.inputs:
            checker.type(v.type, v.loc)
        for v in fn.attributes.values():
            checker.value(v, fn.loc)
    for _, _, block in ctx.blocks:
        for v in block.inputs:
            checker.type(v.type, v.loc)
        for v in block.attributes.values():
            checker.value(v, block.loc)
        for op in block.operations:
            checker.operation(op)


class _Values:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.reported_files: set = set()

    def operation(self, op) -> None:
        where = self.ctx.where
        for v in op.outputs:
            self.type(v.type, v.loc)
        for key, bindings in op.inputs.items():
            for b in bindings:
                if b is not None and not isinstance(b, str):
                    self.value(b, partial(where.key, op.loc, key))
        for key, v in op.attributes.items():
            self.value(v, partial(where.key, op.loc, key))
        if op.type == "const" and "val" in op.attributes and len(op.outputs) == 1:
            val, out = op.attributes["val"], op.outputs[0]
            if val.type != out.type and not compatible(val.type, out.type):
                self.ctx.error("value-type", where.key(op.loc, "val"),
                               f"the value is {describe(val.type)}, but {var(out.name)} is declared "
                               f"{describe(out.type)}")

    def type(self, t, loc) -> None:
        if isinstance(t, TensorType):
            if t.rank is not None and not (t.rank == -1 and not t.shape):
                self.ctx.error("rank-mismatch", loc, f"{describe(t)} has rank {t.rank} but "
                               f"{len(t.shape)} dimensions")
            for v in t.attributes.values():
                self.value(v, loc)
        elif isinstance(t, ListType):
            self.type(t.element, loc)
        elif isinstance(t, TupleType):
            for x in t.types:
                self.type(x, loc)
        elif isinstance(t, DictType):
            self.type(t.key, loc)
            self.type(t.value, loc)
        elif isinstance(t, StateType):
            self.type(t.wrapped, loc)

    def value(self, v, loc) -> None:
        if v is None:
            return
        self.type(v.type, loc)
        t, data = v.type, v.data
        if isinstance(t, StateType):
            t = t.wrapped
        if isinstance(data, Elided):
            self.ctx.error("elided-value", loc, "this value was left out as [...]; write it out")
        elif t is None or data is None or isinstance(data, (EmptyImmediate, WeightRef)):
            return  # a WeightRef: the weight_refs family checks it
        elif isinstance(t, TensorType) and isinstance(data, TensorData):
            self.tensor(t, data, loc)
        elif isinstance(t, TensorType) and isinstance(data, Blob):
            unsafe = _outside_the_model(data.file, getattr(self.ctx, "folder", None))
            if unsafe:
                self.ctx.error("weight-file", loc, unsafe)
            elif self.ctx.weights is not None:
                self.blob(t, data, loc)
        elif isinstance(t, ListType) and isinstance(data, ListData):
            if type(t.length) is int and t.length != len(data.values):
                self.ctx.error("element-count", loc, f"{describe(t)} has length {t.length}, "
                               f"but the value holds {len(data.values)} elements")
            self.elements(data.values, [t.element] * len(data.values), loc)
        elif isinstance(t, TupleType) and isinstance(data, TupleData):
            if len(t.types) != len(data.values):
                self.ctx.error("element-count", loc, f"{describe(t)} has {len(t.types)} elements, "
                               f"but the value holds {len(data.values)}")
            self.elements(data.values, t.types, loc)
        elif isinstance(t, DictType) and isinstance(data, DictData):
            for key, value in data.items:
                self.elements([key, value], [t.key, t.value], loc)
        else:
            self.ctx.error("value-type", loc, f"a {describe(v.type)} value cannot hold "
                           f"{_DATA_WORDS.get(type(data).__name__, 'this data')}")

    def elements(self, values: list, types: list, loc) -> None:
        for v, t in zip(values, types):
            if v is None:
                continue
            if not compatible(v.type, t):
                self.ctx.error("value-type", loc, f"an element of type {describe(v.type)} where "
                               f"{describe(t)} is declared")
            self.value(v, loc)

    def tensor(self, t: TensorType, data: TensorData, loc) -> None:
        if data.field is None:
            return
        try:
            dt = dtypes.by_name(t.dtype)
        except KeyError:
            return
        if not dt.storage:
            return
        if data.field != dt.storage:
            self.ctx.error("value-dtype", loc, f"{dt.name} elements are stored in {dt.storage}, "
                           f"but this value keeps them in {data.field}")
            return
        count = t.element_count
        if count is not None:
            if data.field == "bytes":
                have, need, unit = len(data.values), (count * dt.bits + 7) // 8, "bytes"
            else:
                have, need, unit = len(data.values), count, "elements"
            if have != need:
                self.ctx.error("element-count", loc, f"{describe(t)} holds {need} {unit}, but the "
                               f"value has {have}")
                return
        if data.field in ("ints", "longInts") and decode_tensor(dt, data, count) is None:
            self.ctx.error("value-dtype", loc, f"an element of this value does not fit in {dt.name}")

    def blob(self, t: TensorType, blob: Blob, loc) -> None:
        weights = self.ctx.weights
        path = weights.find(blob.file)
        name = os.path.basename(blob.file)
        if path is None:
            if blob.file not in self.reported_files:
                self.reported_files.add(blob.file)
                self.ctx.warning("missing-weight-file", loc, f"weight file {name} is not in "
                                 f"{weights.folder}; its blobs are not checked")
            return
        try:
            weight_file = weights.get(path)
        except WeightFileError as e:
            if blob.file not in self.reported_files:
                self.reported_files.add(blob.file)
                self.ctx.error("weight-file", loc, e.reason)
            return
        try:
            record = weight_file.record(blob.offset)
        except WeightFileError as e:
            self.ctx.error("blob-range", loc, e.reason)
            return
        if record.dtype != t.dtype:
            self.ctx.error("blob-mismatch", loc, f"the blob at offset {blob.offset} holds {record.dtype} "
                           f"data, but the value is {describe(t)}")
            return
        count = t.element_count
        if count is not None and record.count != count:
            self.ctx.error("blob-mismatch", loc, f"the blob at offset {blob.offset} holds "
                           f"{record.count} elements, but {describe(t)} holds {count}")


def _outside_the_model(file_name: str, folder: str | None) -> str | None:
    """Why a blob's file is not one of the model's own (a name not under @model_path, a '..',
    an absolute path, a link out), or None: Core ML reads no file from elsewhere."""
    from ..files import UnsafePathError
    from ..model.blobs import blob_path
    try:
        blob_path(folder or os.getcwd(), file_name)
    except UnsafePathError as e:
        return str(e)
    return None


_DATA_WORDS = {"TensorData": "tensor data", "ListData": "a list", "TupleData": "a tuple",
               "DictData": "a dict", "Blob": "a blob"}
