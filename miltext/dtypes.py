"""The element types of MIL tensors: names, proto codes, widths and how each is stored.

One table serves every door: the text spells a dtype by `name`, the proto by `code`, a
`TensorValue` keeps its elements in the `storage` field, and decoded data is a numpy array of
`numpy` (sub-byte, bf16 and fp8 data is unpacked to the nearest numpy type).
"""
from __future__ import annotations

from collections import namedtuple

from .lazy import numpy as np


class DType(namedtuple("DType", "name code bits kind storage numpy_name")):
    """A MIL dtype: its text spelling (fp32, int4, ...), its CoreML.Specification.MILSpec.DataType
    code, its element width in bits (0: variable, string), its kind ("float", "int", "uint",
    "bool", "string", "none"), the TensorValue field coremltools writes it to, and the numpy
    dtype of decoded elements (made on first use: see lazy). A named tuple, not a dataclass:
    git's textconv reads dtypes, and dataclasses (with inspect) is a tenth of its start-up."""
    __slots__ = ()

    @property
    def numpy(self):
        return None if self.numpy_name is None else _numpy_dtype(self.numpy_name)

    @property
    def sub_byte(self) -> bool:
        return 0 < self.bits < 8

    @property
    def packed(self) -> bool:
        """Stored in TensorValue.bytes, element after element, little-endian, LSB-first bits."""
        return self.storage == "bytes"


_TABLE = [
    DType("unused", 0, 0, "none", "", None),
    DType("bool", 1, 8, "bool", "bools", "bool"),
    DType("string", 2, 0, "string", "strings", "object"),
    DType("fp16", 10, 16, "float", "bytes", "float16"),
    DType("fp32", 11, 32, "float", "floats", "float32"),
    DType("fp64", 12, 64, "float", "doubles", "float64"),
    DType("bf16", 13, 16, "float", "bytes", "float32"),
    DType("int8", 21, 8, "int", "bytes", "int8"),
    DType("int16", 22, 16, "int", "ints", "int16"),
    DType("int32", 23, 32, "int", "ints", "int32"),
    DType("int64", 24, 64, "int", "longInts", "int64"),
    DType("int4", 25, 4, "int", "bytes", "int8"),
    DType("uint8", 31, 8, "uint", "bytes", "uint8"),
    DType("uint16", 32, 16, "uint", "ints", "uint16"),
    DType("uint32", 33, 32, "uint", "bytes", "uint32"),
    DType("uint64", 34, 64, "uint", "longInts", "uint64"),
    DType("uint4", 35, 4, "uint", "bytes", "uint8"),
    DType("uint2", 36, 2, "uint", "bytes", "uint8"),
    DType("uint1", 37, 1, "uint", "bytes", "uint8"),
    DType("uint6", 38, 6, "uint", "bytes", "uint8"),
    DType("uint3", 39, 3, "uint", "bytes", "uint8"),
    DType("fp8e4m3fn", 40, 8, "float", "bytes", "float32"),
    DType("fp8e5m2", 41, 8, "float", "bytes", "float32"),
]

_NUMPY_DTYPES: dict = {}


def _numpy_dtype(name: str):
    found = _NUMPY_DTYPES.get(name)
    if found is None:
        found = _NUMPY_DTYPES[name] = np.dtype(name)
    return found


BY_NAME = {d.name: d for d in _TABLE}
BY_CODE = {d.code: d for d in _TABLE}
NAMES = tuple(d.name for d in _TABLE)

# Spellings other tools use for the same dtypes (coremltools' print, numpy-style names).
ALIASES = {
    "str": "string", "int": "int64", "float": "fp32", "float16": "fp16", "float32": "fp32",
    "float64": "fp64", "bfloat16": "bf16", "half": "fp16", "double": "fp64",
    # coremltools 4's print (its type_mapping.py until 5.0 spelled the integer dtypes so)
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64",
    "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
}

# Default dtype of a bare literal, as coremltools reads one: a float is fp32, an int int32.
DEFAULT_FOR_KIND = {"float": "fp32", "int": "int32", "bool": "bool", "string": "string"}


def by_name(name: str) -> DType:
    """The dtype spelled `name` (or an alias, or `dtypeN` for a code this table lacks)."""
    name = ALIASES.get(name, name)
    found = BY_NAME.get(name)
    if found is not None:
        return found
    code = name[5:].removeprefix("-")
    if name.startswith("dtype") and code.isdigit() and code.isascii():  # open enum: codes may be negative
        return by_code(int(name[5:]))
    raise KeyError(name)


def by_code(code: int) -> DType:
    """The dtype with proto code `code`; an unknown code gets a placeholder that round-trips."""
    found = BY_CODE.get(code)
    if found is None:
        found = DType(f"dtype{code}", code, 0, "none", "", None)
    return found
