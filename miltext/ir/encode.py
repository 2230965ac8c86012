"""Object model → MIL proto. Writes into messages in place; no intermediate copies."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..bulk import bulk
from ..errors import ProgramError
from ..proto import schema
from . import fastencode, unknown
from .types import MISSING, UNSET_DIM, VARIADIC, DictType, ListType, StateType, TensorType, TupleType, UnknownType
from .values import Blob, DictData, Elided, EmptyImmediate, ListData, TensorData, TupleData, Value, WeightRef

_FIXED_WIDTH = {"floats": np.dtype("<f4"), "doubles": np.dtype("<f8")}


def program_to_proto(program, *, strict: bool = False):
    data = _native_bytes(program, strict)
    return _python_proto(program, strict) if data is None else schema.Program.FromString(data)


def program_bytes(program, *, strict: bool = False) -> bytes:
    """program_to_proto(program, strict=strict).SerializeToString(deterministic=True): the same
    bytes and errors, straight from the native encoder when it answers (no message is built)."""
    data = _native_bytes(program, strict)
    return _python_proto(program, strict).SerializeToString(deterministic=True) if data is None else data


def _native_bytes(program, strict: bool) -> bytes | None:
    """The native encoder's bytes, or None for the Python path; with `strict`, after the check
    of references. (What the encoder writes nests at most 64 messages deep, so protobuf reads
    it back: strict's readability check holds without a second parse.)"""
    if strict:
        _check_references(program)
    return fastencode.program_bytes(program)


def _check_references(program) -> None:
    from .scopes import undefined_references
    missing = undefined_references(program)
    if missing:
        raise ProgramError.at(missing[0][1], f"%{missing[0][0]} is not defined" + (
            f" (and {len(missing) - 1} more undefined names)" if len(missing) > 1 else ""))


def _python_proto(program, strict: bool):
    with bulk():
        msg = _program(program)
    if strict:
        _check_readable(msg)
    return msg


def _check_readable(msg) -> None:
    """What protobuf cannot read back (nested past its 100 message levels), Core ML cannot load."""
    from google.protobuf.message import DecodeError
    try:
        schema.Program.FromString(msg.SerializeToString())
    except DecodeError:
        raise ProgramError("the program is nested deeper than protobuf reads (100 message levels, "
                           "about 45 nested blocks)") from None


def _program(program):
    msg = schema.Program()
    msg.version = program.version
    msg.docString = program.doc
    for name, fn in program.functions.items():
        function(fn, msg.functions[name])
    value_map(program.attributes, msg.attributes)
    if program.unknown_fields:
        unknown.apply(msg, program.unknown_fields)
    return msg


def function(fn, msg) -> None:
    for v in fn.inputs:
        var(v, msg.inputs.add())
    msg.opset = fn.opset
    for key, b in fn.blocks.items():
        block(b, msg.block_specializations[key])
    value_map(fn.attributes, msg.attributes)


def block(b, msg) -> None:
    for v in b.inputs:
        var(v, msg.inputs.add())
    msg.outputs.extend(b.outputs)
    for op in b.operations:
        operation(op, msg.operations.add())
    value_map(b.attributes, msg.attributes)


def operation(op, msg) -> None:
    msg.type = op.type
    for key, bindings in op.inputs.items():
        arg = msg.inputs[key]  # a map's entry exists once looked up, even with no bindings
        for b in bindings:
            out = arg.arguments.add()
            if isinstance(b, str):
                out.name = b
            elif isinstance(b, Value):
                value(b, out.value, where=op)
    for v in op.outputs:
        var(v, msg.outputs.add())
    for b in op.blocks:
        block(b, msg.blocks.add())
    value_map(op.attributes, msg.attributes, where=op)


def var(v, msg) -> None:
    msg.name = v.name
    if v.type is not None:
        value_type(v.type, msg.type)


def value_map(values: dict, entries, where=None) -> None:
    for key, v in values.items():
        value(v, entries[key], where)


_TENSOR_TYPE_BYTES: dict = {}  # (dtype, shape, rank) -> serialized ValueType: types repeat


def _set(message):
    """`message` (a submessage field) marked present, even when it stays empty."""
    message.SetInParent()
    return message


def _inner(t, message) -> None:
    """A container's inner type into `message`, which stays unset when the type is."""
    if t is not None:
        value_type(t, message)


def value_type(t, msg) -> None:
    if type(t) is TensorType and not t.attributes:
        key = (t.dtype, t.shape, t.rank)
        wire = _TENSOR_TYPE_BYTES.get(key)
        if wire is None:
            scratch = schema.ValueType()
            _tensor_type(t, scratch)
            wire = scratch.SerializeToString()
            if len(_TENSOR_TYPE_BYTES) < 4096:
                _TENSOR_TYPE_BYTES[key] = wire
        msg.MergeFromString(wire)
    elif isinstance(t, TensorType):
        _tensor_type(t, msg)
    elif isinstance(t, ListType):
        out = _set(msg.listType)
        _inner(t.element, out.type)
        if t.length is not MISSING:
            dimension(t.length, out.length)
    elif isinstance(t, TupleType):
        out = _set(msg.tupleType)
        for item in t.types:
            value_type(item, out.types.add())
    elif isinstance(t, DictType):
        out = _set(msg.dictionaryType)
        _inner(t.key, out.keyType)
        _inner(t.value, out.valueType)
    elif isinstance(t, StateType):
        _inner(t.wrapped, _set(msg.stateType).wrappedType)
    elif isinstance(t, UnknownType):
        msg.SetInParent()
    else:
        raise TypeError(f"not a MIL type: {t!r}")


def _tensor_type(t, msg) -> None:
    out = msg.tensorType
    out.SetInParent()
    out.dataType = dtypes.by_name(t.dtype).code
    out.rank = t.proto_rank
    for d in t.shape:
        dimension(d, out.dimensions.add())
    value_map(t.attributes, out.attributes)


def dimension(d, msg) -> None:
    if d is UNSET_DIM:
        msg.SetInParent()
    elif d is None:
        msg.unknown.SetInParent()
    elif d is VARIADIC:
        msg.unknown.variadic = True
    else:
        msg.constant.SetInParent()
        msg.constant.size = d


def value(v: Value, msg, where=None) -> None:
    if v.doc:
        msg.docString = v.doc
    if v.type is not None:
        value_type(v.type, msg.type)
    data = v.data
    if data is None:
        return
    if isinstance(data, Blob):
        msg.blobFileValue.fileName = data.file
        msg.blobFileValue.offset = data.offset
        return
    if isinstance(data, Elided):
        raise ProgramError.at(getattr(where, "loc", None),
                              "a value here was left out as [...]; write the value to build the program")
    if isinstance(data, WeightRef):
        raise ProgramError.at(data.loc or getattr(where, "loc", None),
                              f"a weight in {data.path} is read when a package is built; build a .mlpackage "
                              "(miltext build FILE -o X.mlpackage, or miltext.model.write_model "
                              "from Python), which copies it into the weight file")
    imm = msg.immediateValue
    if isinstance(data, TensorData):
        tensor(data, imm.tensor)  # which sets imm
        return
    imm.SetInParent()
    if isinstance(data, TupleData):
        imm.tuple.SetInParent()
        for item in data.values:
            value(item, imm.tuple.values.add(), where)
    elif isinstance(data, ListData):
        imm.list.SetInParent()
        for item in data.values:
            value(item, imm.list.values.add(), where)
    elif isinstance(data, DictData):
        imm.dictionary.SetInParent()
        for key, val in data.items:
            pair = imm.dictionary.values.add()
            if key is not None:
                value(key, pair.key, where)
            if val is not None:
                value(val, pair.value, where)
    elif not isinstance(data, EmptyImmediate):
        raise TypeError(f"not MIL value data: {data!r}")


def tensor(data: TensorData, msg) -> None:
    if data.field is None:
        msg.SetInParent()
        return
    field = getattr(msg, data.field)
    field.SetInParent()  # an empty list is still a set field: the oneof says which
    if data.field == "bytes":
        field.values = data.values
    elif data.field in _FIXED_WIDTH:
        raw = data.values.astype(_FIXED_WIDTH[data.field], copy=False).tobytes()
        if raw:  # parse our own wire bytes: one memcpy instead of a Python loop per element
            field.MergeFromString(b"\x0a" + _varint(len(raw)) + raw)
    elif data.field == "strings":
        field.values.extend(data.values)
    else:
        field.values.extend(data.values.tolist())


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
