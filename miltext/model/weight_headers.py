"""The headers of the files weights by reference name (`.npy`, `.safetensors`): each tensor's
shape, dtype and where its bytes are, read without the data and checked against the file's
size, so that a header which promises more than the file holds is found before anything is read.

`Headers` parses each file once, however many references name it (a 13 MB safetensors header
named 300 times is parsed once): keyed by the file's path and identity (device, inode, size,
modification time), so a file that changes is parsed again. A check makes one; the language
server keeps one for its session.
"""
from __future__ import annotations

import json
import os
import struct
import warnings
from collections import OrderedDict

from ..errors import InputError
from ..files import UnreadableError, open_regular

MAX_SAFETENSORS_HEADER = 100_000_000   # the limit of the safetensors format itself
CACHED_FILES = 16                      # headers a cache keeps (the most recently used)

# safetensors' dtype names -> (miltext's name, how an element is stored as numpy sees it:
# bf16 and fp8 as their bit patterns, which miltext.packing decodes)
SAFETENSORS_DTYPES = {"F16": ("fp16", "<f2"), "F32": ("fp32", "<f4"), "F64": ("fp64", "<f8"),
                      "BF16": ("bf16", "<u2"), "I8": ("int8", "|i1"), "U8": ("uint8", "|u1"),
                      "I16": ("int16", "<i2"), "U16": ("uint16", "<u2"), "I32": ("int32", "<i4"),
                      "U32": ("uint32", "<u4"), "I64": ("int64", "<i8"), "U64": ("uint64", "<u8"),
                      "BOOL": ("bool", "|b1"), "F8_E4M3": ("fp8e4m3fn", "|u1"), "F8_E5M2": ("fp8e5m2", "|u1")}


class WeightFileProblem(InputError):
    """What is wrong with a weight file, worded to follow its name ("is not a .npy file (...)").
    `at_tensor`: the problem is the tensor's name (it is not in the file)."""

    def __init__(self, message: str, at_tensor: bool = False):
        super().__init__(message)
        self.message, self.at_tensor = message, at_tensor


class TensorHeader:
    """What a file says about a tensor: its shape, its dtype (miltext's name, or the file's own
    for one miltext lacks), and, when it can be read, how an element is stored (a numpy dtype
    string), where its bytes start and whether they are in Fortran order."""
    __slots__ = ("shape", "dtype", "stored", "offset", "fortran")

    def __init__(self, shape: tuple, dtype: str, stored: str | None = None, offset: int = 0, fortran: bool = False):
        self.shape, self.dtype, self.stored, self.offset, self.fortran = shape, dtype, stored, offset, fortran

    @property
    def count(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    def __eq__(self, other) -> bool:
        return isinstance(other, TensorHeader) and (self.shape, self.dtype) == (other.shape, other.dtype)

    def __repr__(self) -> str:
        return f"TensorHeader({self.shape}, {self.dtype!r})"


class Headers:
    """The parsed headers of weight files, each file parsed once while it stays the same."""

    def __init__(self, limit: int = CACHED_FILES):
        self._files: OrderedDict = OrderedDict()
        self._limit = limit

    def tensor(self, path: str, fmt: str, name: str | None = None) -> TensorHeader:
        """The header of tensor `name` (a safetensors file) or of the array (a .npy file) in the
        regular file `path`. UnreadableError when it is not one; WeightFileProblem when its
        header is wrong or promises more than the file holds."""
        with open_regular(path, f".{fmt} file") as f:
            st = os.fstat(f.fileno())
            key = (os.path.abspath(path), fmt, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            parsed = self._files.get(key)
            if parsed is None:
                try:
                    parsed = _npy(f, st.st_size) if fmt == "npy" else _Safetensors(f, st.st_size)
                except WeightFileProblem as e:
                    parsed = e          # a broken header is as broken the next time it is asked
                self._files[key] = parsed
                while len(self._files) > self._limit:
                    self._files.popitem(last=False)
            else:
                self._files.move_to_end(key)
        if isinstance(parsed, WeightFileProblem):
            raise parsed
        return parsed if fmt == "npy" else parsed.tensor(name)


def _npy(f, size: int) -> TensorHeader:
    from ..lazy import numpy as np
    fmt = np.lib.format
    try:
        with warnings.catch_warnings():   # numpy's word on headers Python 2 wrote is not the user's concern
            warnings.simplefilter("ignore")
            version = fmt.read_magic(f)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read(f)
    except Exception as e:  # noqa: BLE001 - numpy's header reader fails on hostile bytes in many ways
        raise WeightFileProblem(f"is not a .npy file ({str(e)[:120]})") from None
    shape = tuple(int(d) for d in shape)
    if dtype.hasobject:
        raise WeightFileProblem("holds Python objects, not numbers")
    header = TensorHeader(shape, _numpy_dtype_name(dtype), dtype.str, f.tell(), bool(fortran) and len(shape) > 1)
    _fits(header, dtype.itemsize, size - header.offset)
    return header


def _numpy_dtype_name(dtype) -> str:
    kind, size = dtype.kind, dtype.itemsize
    if kind == "f" and size in (2, 4, 8):
        return {2: "fp16", 4: "fp32", 8: "fp64"}[size]
    if kind in "iu" and size in (1, 2, 4, 8):
        return f"{'int' if kind == 'i' else 'uint'}{size * 8}"
    if kind == "b":
        return "bool"
    return str(dtype)


def _fits(header: TensorHeader, itemsize: int, available: int) -> None:
    """The header's shape is no more than the bytes the file holds for it."""
    need = header.count * itemsize
    if need > available:
        raise WeightFileProblem(f"is truncated: its header says {_shape(header.shape)} x {header.dtype}, "
                                f"{need:,} bytes, but the file holds {max(available, 0):,} for it")


def _shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")" if len(shape) != 1 else f"({shape[0]},)"


class _Safetensors:
    """A safetensors file's header: an 8-byte little-endian length, then that much JSON naming
    each tensor's dtype, shape and [start, end) in the data that follows."""

    def __init__(self, f, size: int):
        head = f.read(8)
        if len(head) < 8:
            raise WeightFileProblem(f"is not a .safetensors file ({size} bytes, too few for a header)")
        (length,) = struct.unpack("<Q", head)
        if length > MAX_SAFETENSORS_HEADER or 8 + length > size:
            raise WeightFileProblem(f"is not a .safetensors file (its header says it is {length:,} bytes; "
                                    f"the file has {size:,})")
        try:
            entries = json.loads(f.read(length).decode("utf-8"))
        except (ValueError, RecursionError) as e:
            raise WeightFileProblem(f"is not a .safetensors file (its header is not JSON: {str(e)[:80]})") from None
        if not isinstance(entries, dict):
            raise WeightFileProblem("is not a .safetensors file (its header is not a JSON object)")
        entries.pop("__metadata__", None)
        self.entries, self.data_start, self.data_size = entries, 8 + length, size - 8 - length

    def tensor(self, name) -> TensorHeader:
        entry = self.entries.get(name)
        if entry is None:
            import difflib
            names = sorted(self.entries)
            near = difflib.get_close_matches(name, names, n=3) if len(names) < 10_000 else []
            hint = f"; it has {', '.join(near)}" if near else f" (it has {len(names)} tensors)"
            raise WeightFileProblem(f"has no tensor {name!r}{hint}", at_tensor=True)
        problem = _entry_problem(entry)
        if problem:
            raise WeightFileProblem(f"is not a .safetensors file (tensor {name!r}: {problem})")
        start, end = entry["data_offsets"]
        if end > self.data_size:
            raise WeightFileProblem(f"is truncated: tensor {name!r} ends at byte {end:,} of the data, "
                                    f"which has {self.data_size:,}")
        file_dtype = entry["dtype"]
        dtype, stored = SAFETENSORS_DTYPES.get(file_dtype, (file_dtype, None))
        header = TensorHeader(tuple(entry["shape"]), dtype, stored, self.data_start + start)
        if stored is not None and header.count * int(stored[2]) != end - start:
            raise WeightFileProblem(f"is not a .safetensors file (tensor {name!r}: shape {_shape(header.shape)} "
                                    f"x {dtype} is not its {end - start:,} bytes)")
        return header


def _entry_problem(entry) -> str | None:
    if not isinstance(entry, dict):
        return "not an object"
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if not isinstance(dtype, str):
        return "no dtype"
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
        return "its shape is not a list of sizes"
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(type(o) is int for o in offsets) \
            or not 0 <= offsets[0] <= offsets[1]:
        return "its data_offsets are not [start, end]"
    return None


__all__ = ["Headers", "TensorHeader", "WeightFileProblem", "UnreadableError", "SAFETENSORS_DTYPES"]
