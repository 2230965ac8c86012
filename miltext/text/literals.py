"""From parsed literals to Values: what `1.0`, `[1, 2]`, `fp16(...)` or `(2, fp32)(...)` mean.

The grammar hands over literals as plain Python data (numbers, strings, bools) and the small
classes below; a Value is made once the type is known: the one written in front of the data,
the one the context gives (an element of a typed list, tuple or dict), or else the default for
how the literal is written (a float is fp32, an int int32).
"""
from __future__ import annotations

import binascii

import numpy as np

from .. import dtypes, packing
from ..ir import DictData, DictType, Elided, EmptyImmediate, ListData, ListType, StateType, TensorData, TensorType, TupleData, TupleType, UnknownType, Value
from ..ir.values import FIELD_NUMPY, encode_tensor
from .lexemes import LiteralError, NanBits  # noqa: F401 - LiteralError is this module's error too

MAX_LITERAL_DEPTH = 64


class ListLit(list):
    """`[a, b, ...]`: items are literals or Values."""


class DictLit(list):
    """`{k: v, ...}`: (key, value) pairs; ABSENT for a side the proto leaves unset."""


class Group(list):
    """`(a, b, ...)`: bindings, a tensor type, or tuple elements, depending on the place."""


class B64(bytes):
    """`b64"..."`: little-endian element bytes."""

    @classmethod
    def decode(cls, token: str) -> "B64":
        try:
            return cls(binascii.a2b_base64(token[4:-1], strict_mode=True))
        except binascii.Error as e:
            raise LiteralError(f"b64 data is not valid base64 ({e})") from None


class Ref(str):
    """`%name` inside a group."""


class NumLit:
    """A (nested) list of plain numbers read in one go: its elements as a flat numpy array
    (int64 when every element is an integer, float64 otherwise), and the shape of its nesting."""
    __slots__ = ("array", "shape", "kind", "pos", "token")

    def __init__(self, array: np.ndarray, shape: tuple, kind: str, pos=None):
        self.array, self.shape, self.kind, self.pos, self.token = array, shape, kind, pos, None

    def as_list_literal(self) -> "ListLit":
        """The same literal as nested ListLits, for places that take elements one by one."""
        values = self.array.tolist()
        if self.array.dtype == np.float64:
            values = [float(v) for v in values]

        def nest(flat, shape):
            if len(shape) == 1:
                return ListLit(flat)
            step = len(flat) // shape[0] if shape[0] else 0
            return ListLit(nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0]))
        return nest(values, self.shape)


ABSENT = object()      # `_` where the proto has no message
ELIDED = Elided()


# ---- literal inspection ---------------------------------------------------------------------

def _flatten(lit, depth: int = 0) -> tuple[list, tuple]:
    """Scalars of a nested list literal in C order, and the shape its nesting gives."""
    if isinstance(lit, NumLit):
        lit = lit.as_list_literal()
    if not isinstance(lit, ListLit):
        return [lit], ()
    if depth >= MAX_LITERAL_DEPTH:
        raise LiteralError(f"list literal nested deeper than {MAX_LITERAL_DEPTH} levels")
    if not lit:
        return [], (0,)
    if any(isinstance(x, NumLit) for x in lit):
        lit = ListLit(x.as_list_literal() if isinstance(x, NumLit) else x for x in lit)
    if not any(isinstance(x, ListLit) for x in lit):
        for x in lit:
            if isinstance(x, (Value, Group, DictLit)):
                raise LiteralError("a tensor literal holds numbers, strings or bools only")
        return list(lit), (len(lit),)
    flat, inner = [], None
    for item in lit:
        if not isinstance(item, ListLit):
            raise LiteralError("ragged list literal: every element of a level must be a list")
        items, shape = _flatten(item, depth + 1)
        if inner is None:
            inner = shape
        elif shape != inner:
            raise LiteralError(f"ragged list literal: rows of shapes {inner} and {shape}")
        flat.extend(items)
    return flat, (len(lit),) + inner


def _kind(scalars: list) -> str:
    """The literal kind of a list of scalars: float, int, bool or string."""
    kinds = set()
    for s in scalars:
        t = type(s)
        if t is bool:
            kinds.add("bool")
        elif t is int:
            kinds.add("int")
        elif t is float or t is NanBits:
            kinds.add("float")
        elif t is str:
            kinds.add("string")
        elif isinstance(s, str) and s.isidentifier():
            raise LiteralError(f"{s} is a bare name: write %{s} for the var {s}, or \"{s}\" for a string")
        else:
            raise LiteralError(f"not a tensor element: {_shown(s)}")
    if not kinds:
        return "float"
    if kinds <= {"int", "float"}:
        return "float" if "float" in kinds else "int"
    if len(kinds) > 1:
        raise LiteralError("a tensor literal mixes " + " and ".join(sorted(kinds)) + " elements")
    return kinds.pop()


# ---- elements to TensorData -------------------------------------------------------------------

def _floats(scalars: list, dt) -> np.ndarray:
    for s in scalars:
        if type(s) not in (float, int, NanBits):
            raise LiteralError(f"{dt.name} elements must be numbers, not {_shown(s)}")
    values = np.array([float(s) for s in scalars], dtype=np.float64)
    with np.errstate(over="ignore"):
        narrow = values.astype(dt.numpy)
    nan_bits = [(i, s) for i, s in enumerate(scalars) if type(s) is NanBits]
    if not nan_bits:
        return narrow
    bits = packing.float_bits(dtypes.by_name(dt.name), narrow).copy()
    limit = 1 << (bits.dtype.itemsize * 8)
    for i, b in nan_bits:
        if b >= limit:
            raise LiteralError(f"nan(0x{b:x}) has more bits than {dt.name}")
        bits[i] = b
    return packing.bits_to_float(dt, bits)


def _shown(s) -> str:
    return str(s) if isinstance(s, str) and type(s) is not str else repr(s)


def _ints(scalars: list, low: int, high: int, what: str) -> np.ndarray:
    for s in scalars:
        if type(s) is not int:
            if type(s) is float and s.is_integer():
                continue
            raise LiteralError(f"{what} elements must be integers, not {_shown(s)}")
        if not low <= s <= high:
            raise LiteralError(f"{s} does not fit in {what} ({low} to {high})")
    return np.array([int(s) for s in scalars], dtype=np.int64 if low < 0 or high < 2**63 else np.uint64)


def _int_range(dt) -> tuple[int, int]:
    if dt.kind == "uint":
        return 0, (1 << dt.bits) - 1
    return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1


def elements(dt, scalars: list) -> np.ndarray:
    """Literal scalars as an array of dt.numpy, checked against the dtype."""
    if dt.kind == "float":
        return _floats(scalars, dt)
    if dt.kind in ("int", "uint"):
        low, high = _int_range(dt)
        return _ints(scalars, low, high, dt.name).astype(dt.numpy)
    if dt.kind == "bool":
        if any(type(s) is not bool for s in scalars):
            raise LiteralError("bool elements must be True or False")
        return np.array(scalars, dtype=np.bool_)
    if dt.kind == "string":
        if any(type(s) is not str for s in scalars):
            raise LiteralError("string elements must be strings")
        return np.array(scalars, dtype=object)
    raise LiteralError(f"dtype {dt.name} has no literal form; write its storage, e.g. bytes: b64\"...\"")


def array_elements(dt, lit: NumLit) -> np.ndarray:
    """The elements of a plain-number literal as dt.numpy, checked against the dtype at once."""
    a = lit.array
    if a.dtype == object:  # integers beyond int64: element by element
        return elements(dt, a.tolist())
    if dt.kind == "float":
        with np.errstate(over="ignore"):
            return a.astype(np.float64).astype(dt.numpy)
    if dt.kind in ("int", "uint"):
        if a.dtype.kind == "f":
            if not np.all(np.isfinite(a)) or not np.all(a == np.floor(a)):
                raise LiteralError(f"{dt.name} elements must be integers")
        low, high = _int_range(dt)
        if a.size and (a.min() < low or a.max() > high):
            index = int(np.flatnonzero((a < low) | (a > high))[0])
            error = LiteralError(f"{a[index]:.0f} does not fit in {dt.name} ({low} to {high})")
            error.index = index
            raise error
        return a.astype(dt.numpy)
    return elements(dt, a.tolist())


def tensor_data(dt, lit, count: int | None) -> TensorData:
    """The TensorData of literal `lit` (nested list, scalar or b64) as dtype `dt`."""
    if isinstance(lit, NumLit):
        return encode_tensor(dt, array_elements(dt, lit))
    if isinstance(lit, B64):
        if dt.storage == "strings" or not dt.storage:
            raise LiteralError(f"{dt.name} data cannot be written as b64")
        values = packing.unpack(dt, bytes(lit), count)
        if values is None:
            raise LiteralError(f"b64 data of {len(lit)} bytes is not whole {dt.name} elements"
                               + (f" ({count} expected)" if count is not None else ""))
        return encode_tensor(dt, values) if dt.storage != "bytes" else TensorData("bytes", bytes(lit))
    scalars, _ = _flatten(lit)
    return encode_tensor(dt, elements(dt, scalars))


def storage_data(field: str, lit) -> TensorData:
    """`floats: [...]` and kin: a TensorValue field given element by element as stored."""
    if field == "bytes":
        if not isinstance(lit, B64):
            raise LiteralError('bytes storage is written as b64"..."')
        return TensorData("bytes", bytes(lit))
    if isinstance(lit, B64):
        if field == "strings":
            raise LiteralError("strings storage is written as a list of strings")
        return TensorData(field, np.frombuffer(bytes(lit), FIELD_NUMPY[field].newbyteorder("<")))
    scalars, _ = _flatten(lit)
    if field == "strings":
        if any(type(s) is not str for s in scalars):
            raise LiteralError("strings storage holds strings")
        return TensorData(field, scalars)
    if field == "bools":
        return TensorData(field, elements(dtypes.by_name("bool"), scalars))
    if field in ("floats", "doubles"):
        return TensorData(field, elements(dtypes.by_name("fp32" if field == "floats" else "fp64"), scalars))
    return TensorData(field, elements(dtypes.by_name("int32" if field == "ints" else "int64"), scalars))


# ---- literals to Values -----------------------------------------------------------------------

_SCALAR_DTYPES = {str: "string", float: "fp32", bool: "bool"}


STRING = TensorType("string")  # shared by every string scalar, such as each op's name


def string_value(text: str) -> Value:
    """A string scalar, such as every op's name."""
    return Value(STRING, TensorData("strings", [text]))


def default_value(lit) -> Value:
    """A literal where no type is written or implied: typed the way coremltools types it."""
    if isinstance(lit, Value):
        return lit
    kind = _SCALAR_DTYPES.get(type(lit))
    if kind is not None:  # the common scalars, without the general machinery
        if kind == "string":
            return string_value(lit)
        dt = dtypes.BY_NAME[kind]
        return Value(TensorType(kind), TensorData(dt.storage, np.array([lit], dtype=FIELD_NUMPY[dt.storage])))
    if lit is ELIDED:
        return Value(None, ELIDED)
    if isinstance(lit, DictLit):
        return _default_dict(lit)
    if isinstance(lit, (Group, B64)):
        raise LiteralError("this data needs its type in front, e.g. (2, 3, fp32)(...)")
    if isinstance(lit, NumLit) and lit.array.dtype != object:
        name = "fp32" if lit.kind == "float" else "int32"
        a = lit.array
        if name == "int32" and a.size and (a.min() < -2**31 or a.max() >= 2**31):
            name = "int64"
        dt = dtypes.by_name(name)
        return Value(TensorType(dt.name, lit.shape), encode_tensor(dt, array_elements(dt, lit)))
    scalars, shape = _flatten(lit)
    kind = _kind(scalars)
    name = dtypes.DEFAULT_FOR_KIND[kind]
    if kind == "int" and scalars and not all(-2**31 <= s < 2**31 for s in scalars):
        name = "int64" if all(-2**63 <= s < 2**63 for s in scalars) else "uint64"
    dt = dtypes.by_name(name)
    return Value(TensorType(dt.name, shape), encode_tensor(dt, elements(dt, scalars)))


def _default_dict(lit: DictLit) -> Value:
    if not lit:
        raise LiteralError("an empty dict needs its type: Dict[(string), (string)]({})")
    pairs = [(default_value(k), default_value(v)) for k, v in lit]
    key_t, val_t = pairs[0][0].type, pairs[0][1].type
    if any(k.type != key_t or v.type != val_t for k, v in pairs):
        raise LiteralError("dict keys (and values) differ in type; write the dict's type in front")
    return Value(DictType(key_t, val_t), DictData(pairs))


def typed_value(vtype, data, doc: str = "") -> Value:
    """`TYPE(data)`: data read under the written type (None when the type is `_`)."""
    if data is None:
        return Value(vtype, None, doc)
    if isinstance(data, _Prepared):
        return Value(vtype, data.data, doc)
    if isinstance(data, Value):
        raise LiteralError("a typed value cannot hold another typed value; write the data alone")
    return Value(vtype, interpret(vtype, data), doc)


def interpret(vtype, lit):
    """The data of literal `lit` under type `vtype`."""
    if lit is ELIDED:
        return ELIDED
    if isinstance(vtype, StateType) and vtype.wrapped is not None:
        vtype = vtype.wrapped
    if isinstance(vtype, TensorType):
        if isinstance(lit, (Group, DictLit)):
            raise LiteralError("tensor data is a number, a string, a bool or a list of them")
        return tensor_data(dtypes.by_name(vtype.dtype), lit, vtype.element_count)
    if isinstance(vtype, ListType):
        if isinstance(lit, NumLit):
            lit = lit.as_list_literal()
        if not isinstance(lit, ListLit):
            raise LiteralError("a List value is written [v, ...]")
        return ListData([in_context(x, vtype.element) for x in lit])
    if isinstance(vtype, TupleType):
        if not isinstance(lit, Group):
            lit = Group([lit])
        return TupleData([in_context(x, vtype.types[i] if i < len(vtype.types) else None)
                          for i, x in enumerate(lit)])
    if isinstance(vtype, DictType):
        if not isinstance(lit, DictLit):
            raise LiteralError("a Dict value is written {key: value, ...}")
        return DictData([(None if k is ABSENT else in_context(k, vtype.key),
                          None if v is ABSENT else in_context(v, vtype.value)) for k, v in lit])
    # No usable type: read the data by its own shape (the printer writes its storage instead).
    return default_value(lit).data


def in_context(lit, vtype) -> Value:
    """An element of a typed container: a bare literal takes the container's element type."""
    if isinstance(lit, Value):
        return lit
    if vtype is None or isinstance(vtype, UnknownType):
        return default_value(lit)
    return Value(vtype, interpret(vtype, lit))


class _Prepared:
    """Data already in its final form (blob, storage escape, empty immediate)."""
    __slots__ = ("data",)

    def __init__(self, data):
        self.data = data


def prepared(data) -> _Prepared:
    return _Prepared(data)


def storage_escape(field: str, payload) -> _Prepared:
    """`KIND: payload` data: a TensorValue field, or an immediate of a kind the type lacks."""
    if field == "tensor":
        if payload is not ABSENT:
            raise LiteralError("tensor: takes _ (a TensorValue with no field set)")
        return _Prepared(TensorData(None))
    if field == "tuple":
        items = payload if isinstance(payload, Group) else Group([payload])
        return _Prepared(TupleData([default_value(x) for x in items]))
    if field == "list":
        if isinstance(payload, NumLit):
            payload = payload.as_list_literal()
        if not isinstance(payload, ListLit):
            raise LiteralError("list: takes [v, ...]")
        return _Prepared(ListData([default_value(x) for x in payload]))
    if field == "dict":
        if not isinstance(payload, DictLit):
            raise LiteralError("dict: takes {k: v, ...}")
        return _Prepared(DictData([(None if k is ABSENT else default_value(k),
                                    None if v is ABSENT else default_value(v)) for k, v in payload]))
    if payload is ABSENT:
        raise LiteralError(f"{field}: takes its elements")
    return _Prepared(storage_data(field, payload))


EMPTY_IMMEDIATE = _Prepared(EmptyImmediate())
