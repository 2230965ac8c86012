"""MLIR text of the `coreai` dialect: element and tensor types, constants (small ones inline,
weights as resource blobs so the text stays readable), and one generic-form op line."""
from __future__ import annotations

import numpy as np

from .errors import PortError

# MIL dtype -> MLIR element type. MIL has no signless integers: Core AI spells them si/ui.
ELEMENT = {
    "fp16": "f16", "fp32": "f32", "fp64": "f64", "bf16": "bf16", "bool": "i1",
    "int8": "si8", "int16": "si16", "int32": "si32", "int64": "si64", "int4": "si4",
    "uint8": "ui8", "uint16": "ui16", "uint32": "ui32", "uint64": "ui64", "uint4": "ui4",
    "uint2": "ui2", "fp8e4m3fn": "f8E4M3FN", "fp8e5m2": "f8E5M2",
}

# numpy arrays of these MIL dtypes are stored as their bytes; the rest are cast first.
_NUMPY = {"fp16": np.float16, "fp32": np.float32, "fp64": np.float64, "bool": np.bool_,
          "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
          "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}

INLINE_LIMIT = 16          # elements: a constant this small is written in the op itself


def element(dtype: str) -> str:
    found = ELEMENT.get(dtype)
    if found is None:
        raise PortError(f"Core AI has no element type for MIL's {dtype}")
    return found


def tensor(dtype: str, shape) -> str:
    for d in shape:
        if type(d) is not int:
            raise PortError(f"the shape {tuple(shape)} is not static; Core AI ports need static shapes")
    dims = "".join(f"{d}x" for d in shape)
    return f"tensor<{dims}{element(dtype)}>"


def numpy_dtype(dtype: str):
    found = _NUMPY.get(dtype)
    if found is None:
        raise PortError(f"a constant of MIL's {dtype} cannot be written for Core AI")
    return found


def _scalar_text(v, dtype: str) -> str:
    if dtype == "bool":
        return "true" if v else "false"
    if dtype.startswith("fp") or dtype == "bf16":
        f = float(v)
        if np.isnan(f) or np.isinf(f):          # MLIR spells these as the bit pattern
            return "0x" + np.asarray(f, numpy_dtype(dtype)).tobytes()[::-1].hex().upper()
        return repr(f)
    return str(int(v))


def inline_dense(array: np.ndarray, dtype: str) -> str:
    """`dense<...>` of a small array, elements written out."""
    flat = array.reshape(-1)
    if flat.size == 0:
        return "dense<>" if array.ndim else "dense<0>"
    if flat.size and (flat == flat[0]).all() and not (dtype.startswith("fp") and np.isnan(flat[0])):
        return f"dense<{_scalar_text(flat[0], dtype)}>"      # a splat
    return "dense<" + _nested(array, dtype) + ">"


def _nested(array: np.ndarray, dtype: str) -> str:
    if array.ndim == 0:
        return _scalar_text(array.item(), dtype)
    return "[" + ", ".join(_nested(a, dtype) for a in array) + "]"


def blob(array: np.ndarray, dtype: str) -> bytes:
    """The bytes of a resource blob: Core AI reads them as the element type's little-endian
    values, sub-byte types packed two (int4) or four (uint2) to a byte, low bits first."""
    if dtype in ("int4", "uint4", "uint2"):
        bits = 4 if dtype != "uint2" else 2
        per = 8 // bits
        flat = array.reshape(-1).astype(np.int64) & ((1 << bits) - 1)
        flat = np.concatenate([flat, np.zeros((-flat.size) % per, np.int64)]).reshape(-1, per)
        packed = np.zeros(flat.shape[0], np.int64)
        for i in range(per):
            packed |= flat[:, i] << (bits * i)
        return packed.astype(np.uint8).tobytes()
    return np.ascontiguousarray(array, np.dtype(numpy_dtype(dtype)).newbyteorder("<")).tobytes()


def resource_section(blobs: dict) -> str:
    """The `{-# dialect_resources #-}` trailer holding every blob (alignment 16, as hex)."""
    if not blobs:
        return ""
    lines = [f'      {name}: "0x10000000{data.hex()}"' for name, data in blobs.items()]
    return "{-#\n  dialect_resources: {\n    builtin: {\n" + ",\n".join(lines) + "\n    }\n  }\n#-}\n"


def op_line(result: str | None, name: str, operands: list, operand_types: list, result_types: list,
            properties: str = "") -> str:
    """One op in MLIR's generic form, which every op of every dialect parses."""
    head = f"{result} = " if result else ""
    props = f" <{{{properties}}}>" if properties else ""
    outs = result_types[0] if len(result_types) == 1 else "(" + ", ".join(result_types) + ")"
    return (f'{head}"{name}"({", ".join(operands)}){props} : '
            f'({", ".join(operand_types)}) -> {outs}')


class CValue:
    """A Core AI value: its SSA name and tensor type (MIL dtype, static shape)."""
    __slots__ = ("ssa", "dtype", "shape")

    def __init__(self, ssa: str, dtype: str, shape: tuple):
        self.ssa, self.dtype, self.shape = ssa, dtype, tuple(shape)

    @property
    def type(self) -> str:
        return tensor(self.dtype, self.shape)
