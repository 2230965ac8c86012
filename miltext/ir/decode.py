"""MIL proto → object model. Every field and every set/unset distinction is kept."""
from __future__ import annotations

from google.protobuf.message import DecodeError

from .. import dtypes
from ..bulk import bulk
from ..errors import ProgramError
from ..lazy import LazyTable, numpy as np
from ..proto import schema
from . import unknown
from .program import Block, Function, Operation, Program, Var
from .types import MISSING, UNSET_DIM, VARIADIC, DictType, ListType, StateType, TensorType, TupleType, UnknownType
from .values import Blob, DictData, EmptyImmediate, ListData, TensorData, TupleData, Value

_FIXED_TYPES = {"floats": "<f4", "doubles": "<f8"}
_FIXED_WIDTH = LazyTable(_FIXED_TYPES, lambda field: np.dtype(_FIXED_TYPES[field]))


def program_from_proto(data) -> Program:
    if type(data) is schema.Program:
        msg, unknown_fields = data, unknown.collect(data) if unknown.has_unknown(data) else {}
    else:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            data = data.SerializeToString()   # a message of another pool (coremltools'): meet through bytes
        msg = program_message(data)
        unknown_fields = _unknown_fields(msg, data)
    _TENSOR_TYPES.clear()
    with bulk():
        return Program(
            functions={name: function(f) for name, f in msg.functions.items()},
            version=msg.version, doc=msg.docString, attributes=value_map(msg.attributes),
            unknown_fields=unknown_fields)


def _unknown_fields(msg, data) -> dict:
    """The unknown fields of the program `msg` was just read from `data` (miltext's own message,
    so it may lose them): without them, a message of the bytes' size is almost always the same
    bytes, and then there were none; only otherwise is `data` read again to find them. (unknown.
    has_unknown would copy the whole message, weights included, to tell.)"""
    msg.DiscardUnknownFields()
    if msg.ByteSize() == len(data):
        return {}
    return unknown.collect(program_message(data))


def program_message(data) -> "schema.Program":
    """The Program message in serialized bytes; ProgramError (never protobuf's DecodeError) for
    bytes that are not one."""
    try:
        return schema.Program.FromString(bytes(data))
    except DecodeError as e:
        if "MaxDepth" in str(e) or "depth" in str(e).lower():
            raise ProgramError("the program is nested deeper than protobuf reads "
                               "(100 message levels, about 45 nested blocks)") from None
        raise ProgramError("not a MIL Program protobuf (truncated or corrupt)") from None


def function(msg) -> Function:
    return Function(inputs=[var(v) for v in msg.inputs], opset=msg.opset,
                    blocks={k: block(b) for k, b in msg.block_specializations.items()},
                    attributes=value_map(msg.attributes))


def block(msg) -> Block:
    return Block(inputs=[var(v) for v in msg.inputs], outputs=list(msg.outputs),
                 operations=[operation(op) for op in msg.operations],
                 attributes=value_map(msg.attributes))


def operation(msg) -> Operation:
    return Operation(type=msg.type,
                     inputs={k: [binding(b) for b in arg.arguments] for k, arg in msg.inputs.items()},
                     outputs=[var(v) for v in msg.outputs], blocks=[block(b) for b in msg.blocks],
                     attributes=value_map(msg.attributes))


def binding(msg):
    case = msg.WhichOneof("binding")
    if case == "name":
        return msg.name
    if case == "value":
        return value(msg.value)
    return None


def var(msg) -> Var:
    return Var(msg.name, value_type(msg.type) if msg.HasField("type") else None)


def value_map(entries) -> dict:
    return {k: value(v) for k, v in entries.items()} if entries else {}


# Real programs repeat a handful of tensor types thousands of times: read each kind once, and
# share the instance (types are never changed in place).
_TENSOR_TYPES: dict = {}


def value_type(msg):
    case = msg.WhichOneof("type")
    if case == "tensorType":
        t = msg.tensorType
        key = t.SerializeToString()
        known = _TENSOR_TYPES.get(key)
        if known is not None:
            return known
        shape = tuple(dimension(d) for d in t.dimensions)
        rank = None if t.rank == len(shape) else t.rank
        dtype = dtypes.by_code(t.dataType).name
        if t.attributes:
            return TensorType(dtype, shape, rank, value_map(t.attributes))
        _TENSOR_TYPES[key] = known = TensorType(dtype, shape, rank)
        return known
    if case == "listType":
        t = msg.listType
        return ListType(value_type(t.type) if t.HasField("type") else None,
                        dimension(t.length) if t.HasField("length") else MISSING)
    if case == "tupleType":
        return TupleType([value_type(t) for t in msg.tupleType.types])
    if case == "dictionaryType":
        t = msg.dictionaryType
        return DictType(value_type(t.keyType) if t.HasField("keyType") else None,
                        value_type(t.valueType) if t.HasField("valueType") else None)
    if case == "stateType":
        t = msg.stateType
        return StateType(value_type(t.wrappedType) if t.HasField("wrappedType") else None)
    return UnknownType()


def dimension(msg):
    case = msg.WhichOneof("dimension")
    if case == "constant":
        return msg.constant.size
    if case == "unknown":
        return VARIADIC if msg.unknown.variadic else None
    return UNSET_DIM


def value(msg) -> Value:
    vtype = value_type(msg.type) if msg.HasField("type") else None
    case = msg.WhichOneof("value")
    if case == "immediateValue":
        data = immediate(msg.immediateValue)
    elif case == "blobFileValue":
        data = Blob(msg.blobFileValue.offset, msg.blobFileValue.fileName)
    else:
        data = None
    return Value(vtype, data, msg.docString)


def immediate(msg):
    case = msg.WhichOneof("value")
    if case == "tensor":
        return tensor(msg.tensor)
    if case == "tuple":
        return TupleData([value(v) for v in msg.tuple.values])
    if case == "list":
        return ListData([value(v) for v in msg.list.values])
    if case == "dictionary":
        return DictData([(value(p.key) if p.HasField("key") else None,
                          value(p.value) if p.HasField("value") else None)
                         for p in msg.dictionary.values])
    return EmptyImmediate()


def tensor(msg) -> TensorData:
    case = msg.WhichOneof("value")
    if case is None:
        return TensorData(None)
    field = getattr(msg, case)
    if case == "bytes":
        return TensorData("bytes", field.values)
    if case == "strings":
        return TensorData("strings", list(field.values))
    if case in _FIXED_WIDTH:
        return TensorData(case, _packed_fixed(field, _FIXED_WIDTH[case]))
    return TensorData(case, np.array(field.values, dtype=np.dtype({"ints": np.int32, "longInts": np.int64,
                                                                    "bools": np.bool_}[case])))


def _packed_fixed(field, dtype: np.dtype) -> np.ndarray:
    """Fixed-width packed values read straight from their wire bytes: fast, and exact to the bit
    (NaN payloads survive, where a detour through Python floats could quiet them).

    protobuf writes the known field first, as one packed record (tag, length, data); fields it
    did not know follow and are no values, so exactly `length` bytes are read."""
    count = len(field.values)
    if not count:
        return np.zeros(0, dtype.newbyteorder("="))
    wire = field.SerializeToString()
    length, pos = 0, 1  # after the tag byte of field 1, the length varint
    for shift in range(0, 64, 7):
        byte = wire[pos]
        length |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            break
    if wire[0] != 0x0A or length != count * dtype.itemsize:  # not the layout protobuf writes
        return np.array(field.values, dtype=dtype.newbyteorder("="))
    return np.frombuffer(wire, dtype, count=count, offset=pos).astype(dtype.newbyteorder("="))
