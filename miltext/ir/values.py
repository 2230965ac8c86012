"""Values of MIL: what `Value` holds in MIL.proto, with tensor data as numpy arrays."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import dtypes, packing
from ..lazy import LazyTable, numpy as np
from .types import TensorType, ValueType

# numpy element type of each numeric TensorValue field (strings are a list, bytes are bytes).
_FIELD_TYPES = {"floats": "float32", "doubles": "float64", "ints": "int32", "longInts": "int64", "bools": "bool"}
FIELD_NUMPY = LazyTable(_FIELD_TYPES, lambda field: np.dtype(_FIELD_TYPES[field]))
FIELDS = ("floats", "ints", "bools", "strings", "longInts", "doubles", "bytes")

DEFAULT_WEIGHT_FILE = "@model_path/weights/weight.bin"


class TensorData:
    """A TensorValue: which field holds the elements (None: no field set) and its contents,
    exactly as stored: a numpy array for numeric fields, a list of str, or bytes."""
    __slots__ = ("field", "values")

    def __init__(self, field: str | None, values=None):
        if field is None:
            values = None
        elif field == "bytes":
            values = bytes(values or b"")
        elif field == "strings":
            values = list(values or [])
        elif not (type(values) is np.ndarray and values.dtype == FIELD_NUMPY[field] and values.ndim == 1
                  and values.flags.c_contiguous):
            values = np.ascontiguousarray(values if values is not None else [], FIELD_NUMPY[field]).reshape(-1)
        self.field, self.values = field, values

    def __len__(self) -> int:
        return 0 if self.values is None else len(self.values)

    def __eq__(self, other) -> bool:
        if not isinstance(other, TensorData) or self.field != other.field:
            return NotImplemented if not isinstance(other, TensorData) else False
        if isinstance(self.values, np.ndarray):
            return self.values.tobytes() == other.values.tobytes()
        return self.values == other.values

    def __repr__(self) -> str:
        return f"TensorData({self.field!r}, {self.values!r})"


@dataclass(eq=True, slots=True)
class TupleData:
    values: list = field(default_factory=list)      # Values


@dataclass(eq=True, slots=True)
class ListData:
    values: list = field(default_factory=list)      # Values


@dataclass(eq=True, slots=True)
class DictData:
    items: list = field(default_factory=list)       # (key Value | None, value Value | None)


@dataclass(eq=True, slots=True)
class Blob:
    """A BlobFileValue: the weight at `offset` (of its metadata record) in `file`."""
    offset: int
    file: str = DEFAULT_WEIGHT_FILE


@dataclass(eq=True, slots=True)
class WeightRef:
    """A tensor in a `.npy` or `.safetensors` file, written in MIL text as the value of a const
    (`npy("w.npy")`, `safetensors("model.safetensors", "layers.0.wq")`). It is source, not
    MIL.proto: building the program writes the tensor into the weight file and puts a `Blob` in
    its place (miltext.model.weight_refs). `path` is relative to the text's folder; `source_dtype`
    is the file's dtype when the text casts it (`from=fp32`), else None."""
    format: str                   # "npy" or "safetensors"
    path: str
    tensor: str | None = None     # the tensor's name in a safetensors file
    source_dtype: str | None = None
    loc: tuple | None = field(default=None, compare=False)   # (line, column) of the path in the text
    tensor_loc: tuple | None = field(default=None, compare=False)   # and of the tensor name


@dataclass(eq=True, slots=True)
class EmptyImmediate:
    """An ImmediateValue message with no case set."""


@dataclass(eq=True, slots=True)
class Elided:
    """A value an older coremltools print left out as `[...]`: known to exist, not known."""


@dataclass(eq=True, slots=True)
class Value:
    type: ValueType | None
    data: object = None      # TensorData | TupleData | ListData | DictData | Blob | EmptyImmediate | Elided | WeightRef | None
    doc: str = ""

    @classmethod
    def tensor(cls, values, dtype: str | None = None) -> "Value":
        """A tensor value from array-like data, stored the way coremltools stores it."""
        if isinstance(values, str) and dtype in (None, "string"):   # as below, without numpy
            return cls(TensorType("string", ()), TensorData("strings", [values]))
        if isinstance(values, str) or (isinstance(values, (list, tuple)) and _all_strings(values)):
            array = np.array(values, dtype=object)
            dtype = dtype or "string"
        else:
            array = np.asarray(values)
            dtype = dtype or _dtype_of(array)
        dt = dtypes.by_name(dtype)
        return cls(TensorType(dt.name, array.shape), encode_tensor(dt, array))

    @property
    def array(self) -> np.ndarray:
        """The tensor's elements decoded to numpy, shaped by the type when the counts agree."""
        if not isinstance(self.type, TensorType) or not isinstance(self.data, TensorData):
            if isinstance(self.data, Blob):
                raise TypeError("a blob value's elements are in the model's weight file: read them with "
                                "miltext.model.blobs.Weights(model.folder).blob_array(value)")
            raise TypeError("only an immediate tensor value has an array")
        flat = decode_tensor(dtypes.by_name(self.type.dtype), self.data, self.type.element_count)
        if flat is None:
            raise ValueError("the stored elements do not decode as the declared dtype")
        if self.type.is_static and flat.size == self.type.element_count:
            return flat.reshape(self.type.shape)
        return flat


def _all_strings(values) -> bool:
    flat = np.array(values, dtype=object).reshape(-1)
    return flat.size > 0 and all(isinstance(v, str) for v in flat)


def _dtype_of(array: np.ndarray) -> str:
    kind = array.dtype.kind
    if kind == "f":
        return {2: "fp16", 4: "fp32", 8: "fp64"}[array.dtype.itemsize]
    if kind in "iu":
        return f"{'int' if kind == 'i' else 'uint'}{array.dtype.itemsize * 8}"
    if kind == "b":
        return "bool"
    if kind in "UO":
        return "string"
    raise TypeError(f"no MIL dtype for numpy dtype {array.dtype}")


def encode_tensor(dt: dtypes.DType, array: np.ndarray) -> TensorData:
    """TensorData in the field coremltools uses for `dt`, from values of any numeric kind."""
    flat = np.asarray(array).reshape(-1)
    storage = dt.storage
    if storage == "strings":
        return TensorData("strings", [str(v) for v in flat])
    if storage == "bytes":
        return TensorData("bytes", packing.pack(dt, flat.astype(dt.numpy) if dt.kind != "float" else flat))
    if storage == "":
        raise ValueError(f"dtype {dt.name} has no storage")
    if flat.dtype != dt.numpy:
        flat = flat.astype(dt.numpy)
    field_dtype = FIELD_NUMPY[storage]
    return TensorData(storage, flat if flat.dtype == field_dtype else flat.astype(field_dtype))


def decode_tensor(dt: dtypes.DType, data: TensorData, count: int | None) -> np.ndarray | None:
    """The elements of `data` as dt.numpy, or None when they are not stored the standard way."""
    if data.field != dt.storage:
        return None
    if data.field == "bytes":
        return packing.unpack(dt, data.values, count)
    if data.field == "strings":
        return np.array(data.values, dtype=object)
    values = data.values
    if dt.numpy != values.dtype:
        converted = values.astype(dt.numpy)
        if not np.array_equal(converted.astype(values.dtype), values):
            return None  # e.g. an int16 tensor holding 70000 in its ints field
        return converted
    return values
