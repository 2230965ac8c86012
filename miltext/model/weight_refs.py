"""Weights by reference: a const's value that names a tensor in a `.npy` or `.safetensors` file,

    %wq: (32, 32, fp16) = const(val=(32, 32, fp16)(safetensors("model.safetensors", "layers.0.wq")), name="wq")
    %w1: (64, 32, fp16) = const(val=(64, 32, fp16)(npy("w1.npy", from=fp32)), name="w1")

with the path relative to the folder of the `.mil` file. The type is the tensor's: same shape,
and the same dtype unless `from=` names the file's dtype, which is then cast (rounded) to the
declared one, floats to floats and integers to integers, so that a narrowing is always written;
a value the declared dtype cannot hold (1e300 into fp16, 300 into int8) is an error.
`check` reads only the files' headers (weight_headers); `build` and `pack` stream the data into
the package's `weight.bin` about CHUNK_BYTES at a time, whatever the tensor's shape, so building
from a checkpoint of any size needs little memory; `run` reads a tensor as `build` writes it.

`confine=True` (`--confine-refs`, the language server's default) refuses a path that leads out
of the model's folder: absolute, through `..`, or through a link (docs/safety.md).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from .. import dtypes, packing
from ..blob_storage import BLOB_CODES, HEADER_SIZE, RECORD_SIZE, align
from ..errors import InputError
from ..files import UnreadableError, open_regular
from ..ir import Blob, StateType, TensorType, WeightRef
from ..lazy import numpy as np
from ..text.blob_layout import values as program_values
from .weight_headers import Headers, TensorHeader, WeightFileProblem

CHUNK_BYTES = 1 << 25          # what is read at a time from a large tensor

# the largest finite value of each float dtype a wider one may be cast to
LARGEST = {"fp16": 65504.0, "bf16": 3.3895313892515355e38, "fp32": 3.4028234663852886e38,
           "fp8e4m3fn": 448.0, "fp8e5m2": 57344.0}
_BITS_STORED = ("bf16", "fp8e4m3fn", "fp8e5m2")   # read as their bit patterns (see weight_headers)


class WeightRefError(InputError):
    """A weight reference that cannot be read as its type says; `loc` is its place in the text."""

    def __init__(self, message: str, loc=None):
        super().__init__(message)
        self.message, self.loc = message, loc


def references(program) -> list:
    """(value, loc) of every weight reference of the program, in the order the text writes them."""
    return [(v, loc) for v, loc in program_values(program) if isinstance(v.data, WeightRef)]


def file_path(ref: WeightRef, folder: str | None, confine: bool = False) -> str:
    """The file `ref` names, relative to `folder` (the working folder when None). With
    `confine`, one outside `folder` (absolute, `..`, a link out) is a WeightRefError."""
    path = ref.path
    if folder is not None and not os.path.isabs(path):
        path = os.path.join(folder, path)
    if confine:   # where the system would open it: after every link and `..`
        root = os.path.realpath(folder or os.getcwd())
        if os.path.isabs(ref.path) or "\x00" in path or not os.path.realpath(path).startswith(root + os.sep):
            raise WeightRefError(f"{ref.path} is outside the model's folder, and weight references are "
                                 "confined to it (--confine-refs)", ref.loc)
    return path


# ---- headers ------------------------------------------------------------------------------------

def read_header(ref: WeightRef, folder: str | None, confine: bool = False,
                headers: Headers | None = None) -> TensorHeader:
    """The shape and dtype of the tensor `ref` names (WeightRefError when there is none).
    `headers` keeps each file's header parsed for the next reference (a new one: none kept)."""
    path = file_path(ref, folder, confine)
    if not os.path.lexists(path):
        raise WeightRefError(f"no file {ref.path} (looked for {path})", ref.loc)
    try:
        return (headers or Headers()).tensor(path, ref.format, ref.tensor)
    except UnreadableError as e:
        raise WeightRefError(f"{ref.path}: {e.reason}", ref.loc) from None
    except WeightFileProblem as e:
        raise WeightRefError(f"{ref.path} {e.message}", (ref.tensor_loc or ref.loc) if e.at_tensor else ref.loc) \
            from None


# ---- what the type says -------------------------------------------------------------------------

def mismatch(ref: WeightRef, vtype, header: TensorHeader) -> str | None:
    """Why the tensor cannot be the value of type `vtype`, or None when it fits."""
    t = vtype.wrapped if isinstance(vtype, StateType) else vtype
    if type(t) is not TensorType or not t.is_static:
        return "a weight from a file needs a tensor type of known shape, such as (32, 32, fp16)"
    if t.dtype not in BLOB_CODES:
        return f"a weight file cannot hold {t.dtype}; declare one of {', '.join(BLOB_CODES)}"
    what = f"{ref.path}" + (f" tensor {ref.tensor!r}" if ref.tensor is not None else "")
    if header.shape != tuple(t.shape):
        return f"{what} has shape {_shape(header.shape)}, but the type says {_shape(t.shape)}"
    source = header.dtype
    if ref.source_dtype is None:
        if source != t.dtype:
            hint = f"; write from={source} to cast it" if castable(source, t.dtype) else ""
            return f"{what} holds {source}, but the type says {t.dtype}{hint}"
        return None
    if ref.source_dtype != source:
        return f"from={ref.source_dtype}, but {what} holds {source}"
    if not castable(source, t.dtype):
        return f"{what} holds {source}, which does not cast to {t.dtype} (floats cast to floats, integers to integers)"
    return None


def castable(source: str, target: str) -> bool:
    try:
        s, t = dtypes.by_name(source), dtypes.by_name(target)
    except KeyError:
        return False
    if s.name == t.name:
        return True
    return (s.kind == t.kind == "float") or (s.kind in ("int", "uint") and t.kind in ("int", "uint"))


def _shape(shape) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ")" if len(shape) != 1 else f"({shape[0]},)"


def check(ref: WeightRef, vtype, folder: str | None, confine: bool = False,
          headers: Headers | None = None) -> TensorHeader:
    """The tensor's header, checked against the type (WeightRefError at the reference)."""
    header = read_header(ref, folder, confine, headers)
    problem = mismatch(ref, vtype, header)
    if problem is not None:
        raise WeightRefError(problem, ref.loc)
    return header


# ---- data ---------------------------------------------------------------------------------------

def arrays(ref: WeightRef, folder: str | None, header: TensorHeader, confine: bool = False):
    """The tensor's elements as stored (header.stored), flat and in C order, about CHUNK_BYTES
    at a time whatever its shape."""
    path = file_path(ref, folder, confine)
    stored = np.dtype(header.stored)
    if header.fortran:
        yield from _fortran_arrays(path, header, stored)
        return
    count, size = header.count, stored.itemsize
    step = max(1, CHUNK_BYTES // size)
    try:
        f = open_regular(path, f".{ref.format} file")
    except UnreadableError as e:
        raise WeightRefError(f"{ref.path}: {e.reason}", ref.loc) from None
    with f:
        f.seek(header.offset)
        for at in range(0, count, step):
            n = min(step, count - at)
            data = f.read(n * size)
            if len(data) != n * size:
                raise WeightRefError(f"{ref.path} is truncated: its header promises more data", ref.loc)
            yield np.frombuffer(data, stored)


def _fortran_arrays(path: str, header: TensorHeader, stored):
    """A Fortran-order .npy (rare), through a mapping, in C order a block at a time."""
    if header.count == 0:
        return
    array = np.load(path, mmap_mode="r", allow_pickle=False)
    for block in _blocks(header.shape, stored.itemsize):
        yield np.ascontiguousarray(array[block]).reshape(-1)


def _blocks(shape: tuple, itemsize: int):
    """Index tuples that cut an array of `shape` into pieces of about CHUNK_BYTES, in C order."""
    inner = itemsize
    for d in shape[1:]:
        inner *= d
    if len(shape) == 1 or inner <= CHUNK_BYTES:
        rows = max(1, CHUNK_BYTES // max(inner, 1))
        for start in range(0, shape[0], rows):
            yield (slice(start, min(shape[0], start + rows)),)
        return
    for i in range(shape[0]):
        for rest in _blocks(shape[1:], itemsize):
            yield (i, *rest)


def encoded(ref: WeightRef, folder: str | None, header: TensorHeader, target: str, confine: bool = False):
    """The tensor as `target` blob data, a slice of bytes at a time."""
    dt = dtypes.by_name(target)
    parts = arrays(ref, folder, header, confine)
    if header.dtype == dt.name and not dt.sub_byte:   # as stored, little-endian
        for flat in parts:
            yield flat.astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
        return
    converted = (_converted(ref, _decoded(flat, header.dtype), dt) for flat in parts)
    if dt.sub_byte:   # sub-byte elements share bytes across slices: the whole tensor at once
        yield packing.pack(dt, np.concatenate([np.zeros(0, dt.numpy), *converted]))
        return
    for values in converted:
        yield packing.pack(dt, values)


def tensor(ref: WeightRef, vtype, folder: str | None, header: TensorHeader, confine: bool = False):
    """The tensor as `run` uses it (`header` as `check` gives it): converted as `build` writes it,
    with the same errors, then decoded and shaped."""
    dt = dtypes.by_name((vtype.wrapped if isinstance(vtype, StateType) else vtype).dtype)
    raw = b"".join(encoded(ref, folder, header, dt.name, confine))
    return packing.unpack(dt, raw, header.count).reshape(header.shape)


def _decoded(flat: np.ndarray, dtype: str) -> np.ndarray:
    """Elements stored as bit patterns (bf16, fp8) as float32; others as they are."""
    return packing.bits_to_float(dtypes.by_name(dtype), flat) if dtype in _BITS_STORED else flat


def _converted(ref: WeightRef, flat: np.ndarray, dt) -> np.ndarray:
    """`flat` as dt.numpy: floats rounded, and checked, as integers are, to fit."""
    what = f"{ref.path}{' tensor ' + repr(ref.tensor) if ref.tensor else ''}"
    if dt.kind == "float":
        wide = flat.astype(np.float64 if flat.dtype.itemsize == 8 else np.float32, copy=False)
        largest = LARGEST.get(dt.name)
        if largest is not None and wide.size:
            peak = float(np.max(np.abs(wide), initial=0.0, where=np.isfinite(wide)))
            if peak > largest:
                raise WeightRefError(f"{what} has values beyond {dt.name}'s largest, {largest:g} "
                                     f"(its largest here is {peak:g})", ref.loc)
        return wide.astype(dt.numpy, copy=False)
    if flat.size:
        low, high = dtypes_range(dt)
        if flat.min() < low or flat.max() > high:
            raise WeightRefError(f"{what} has values outside {dt.name}'s range [{low}, {high}]", ref.loc)
    return flat.astype(dt.numpy)


def dtypes_range(dt) -> tuple[int, int]:
    if dt.kind == "uint":
        return 0, (1 << dt.bits) - 1
    return -(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1


# ---- building -----------------------------------------------------------------------------------

@dataclass
class Planned:
    value: object          # the Value holding the reference
    ref: WeightRef
    header: TensorHeader
    dtype: str             # the declared dtype
    count: int             # elements
    offset: int            # of its record in the weight file


class Plan:
    """Where each referenced tensor goes in the weight file: after what the file already holds,
    in program order. `applied()` puts the blobs in the program for as long as it lasts."""

    def __init__(self, program, folder: str | None, base_size: int, confine: bool = False):
        self.items: list[Planned] = []
        end, headers = base_size, Headers()
        for value, _ in references(program):
            ref = value.data
            header = check(ref, value.type, folder, confine, headers)
            t = value.type.wrapped if isinstance(value.type, StateType) else value.type
            count = t.element_count
            offset = align(end)
            self.items.append(Planned(value, ref, header, t.dtype, count, offset))
            end = offset + RECORD_SIZE + packing.packed_size(dtypes.by_name(t.dtype), count)
        self.folder, self.confine = folder, confine
        self.size = end - base_size if self.items else 0   # bytes it adds to the weight file

    def __bool__(self) -> bool:
        return bool(self.items)

    def applied(self):
        return _Applied(self)

    def write(self, writer, progress=None) -> None:
        """Append every tensor to `writer` (a weights.WeightWriter), checking its offset."""
        for item in self.items:
            dt = dtypes.by_name(item.dtype)
            size = packing.packed_size(dt, item.count)
            chunks = encoded(item.ref, self.folder, item.header, item.dtype, self.confine)
            try:
                offset = writer.add_stream(dt.name, size, size * 8 - item.count * dt.bits, chunks, progress)
            except WeightRefError:
                raise
            except Exception as e:  # noqa: BLE001 - a file that changed or broke since its header was read
                raise WeightRefError(f"cannot read {item.ref.path}: {e}", item.ref.loc) from None
            assert offset == item.offset, (offset, item.offset)


class _Applied:
    def __init__(self, plan: Plan):
        self.plan = plan

    def __enter__(self):
        for item in self.plan.items:
            item.value.data = Blob(item.offset)
        return self.plan

    def __exit__(self, *exc):
        for item in self.plan.items:
            item.value.data = item.ref


def plan(program, folder: str | None, weight_file: str | None, confine: bool = False) -> Plan:
    """The plan for the program's references, appended to `weight_file` (None: a new file)."""
    base = os.path.getsize(weight_file) if weight_file and os.path.isfile(weight_file) else HEADER_SIZE
    return Plan(program, folder, base, confine)
