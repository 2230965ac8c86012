"""Weights by reference: a const's value that names a tensor in a `.npy` or `.safetensors` file,

    %wq: (32, 32, fp16) = const(val=(32, 32, fp16)(safetensors("model.safetensors", "layers.0.wq")), name="wq")
    %w1: (64, 32, fp16) = const(val=(64, 32, fp16)(npy("w1.npy", from=fp32)), name="w1")

with the path relative to the folder of the `.mil` file. The type is the tensor's: same shape,
and the same dtype unless `from=` names the file's dtype, which is then cast (rounded) to the
declared one, floats to floats and integers to integers, so that a narrowing is always written.
`check` reads only the files' headers; `build` and `pack` stream the data into the package's
`weight.bin` (a tensor at a time, a large one in slices), so building from a checkpoint of any
size needs little memory. safetensors files are read with the `safetensors` package (the
`weights` extra); bf16 and fp8 tensors in them also need `ml_dtypes`.
"""
from __future__ import annotations

import difflib
import os
from dataclasses import dataclass

from ..lazy import numpy as np

from .. import dtypes, packing
from ..errors import InputError
from ..files import open_regular
from ..ir import Blob, StateType, TensorType, WeightRef
from ..text.blob_layout import values as program_values
from ..blob_storage import BLOB_CODES, HEADER_SIZE, RECORD_SIZE, align

CHUNK_BYTES = 1 << 25          # what is read at a time from a large tensor
INSTALL = "pip install 'miltext[weights]'"

# safetensors' dtype names, as miltext spells them
SAFETENSORS_DTYPES = {"F16": "fp16", "F32": "fp32", "F64": "fp64", "BF16": "bf16", "I8": "int8",
                      "U8": "uint8", "I16": "int16", "U16": "uint16", "I32": "int32", "U32": "uint32",
                      "I64": "int64", "U64": "uint64", "BOOL": "bool", "F8_E4M3": "fp8e4m3fn",
                      "F8_E5M2": "fp8e5m2"}
_NEEDS_ML_DTYPES = {"bf16", "fp8e4m3fn", "fp8e5m2"}


class WeightRefError(InputError):
    """A weight reference that cannot be read as its type says; `loc` is its place in the text."""

    def __init__(self, message: str, loc=None):
        super().__init__(message)
        self.message, self.loc = message, loc


@dataclass(frozen=True)
class TensorHeader:
    """What a file says about a tensor, read from its header alone."""
    shape: tuple
    dtype: str            # a miltext dtype name, or the file's own name for one miltext lacks


def references(program) -> list:
    """(value, loc) of every weight reference of the program, in the order the text writes them."""
    return [(v, loc) for v, loc in program_values(program) if isinstance(v.data, WeightRef)]


def file_path(ref: WeightRef, folder: str | None) -> str:
    path = ref.path
    if folder is not None and not os.path.isabs(path):
        path = os.path.join(folder, path)
    return path


# ---- headers ------------------------------------------------------------------------------------

def read_header(ref: WeightRef, folder: str | None) -> TensorHeader:
    """The shape and dtype of the tensor `ref` names (WeightRefError when there is none)."""
    path = file_path(ref, folder)
    if not os.path.lexists(path):
        raise WeightRefError(f"no file {ref.path} (looked for {path})", ref.loc)
    if ref.format == "npy":
        return _npy_header(path, ref)
    with _safetensors(path, ref) as f:
        if ref.tensor not in f.keys():
            names = sorted(f.keys())
            near = difflib.get_close_matches(ref.tensor, names, n=3)
            hint = f"; it has {', '.join(near)}" if near else f" (it has {len(names)} tensors)"
            raise WeightRefError(f"{ref.path} has no tensor {ref.tensor!r}{hint}", ref.tensor_loc or ref.loc)
        tensor = f.get_slice(ref.tensor)
        name = tensor.get_dtype()
        return TensorHeader(tuple(tensor.get_shape()), SAFETENSORS_DTYPES.get(name, name))


def _npy_header(path: str, ref: WeightRef) -> TensorHeader:
    shape, _, dtype, _ = _npy_layout(path, ref)
    return TensorHeader(shape, _numpy_dtype_name(dtype))


def _npy_layout(path: str, ref: WeightRef):
    """(shape, fortran_order, numpy dtype, offset of the data), from the .npy header (numpy reads it)."""
    fmt = np.lib.format
    with open_regular(path, ".npy file") as f:
        try:
            version = fmt.read_magic(f)
            if version == (1, 0):
                shape, fortran, dtype = fmt.read_array_header_1_0(f)
            else:
                shape, fortran, dtype = fmt.read_array_header_2_0(f)
        except (ValueError, OSError, SyntaxError) as e:
            raise WeightRefError(f"{ref.path} is not a .npy file ({e})", ref.loc) from None
        return tuple(shape), fortran, dtype, f.tell()


def _numpy_dtype_name(dtype: np.dtype) -> str:
    kind, size = dtype.kind, dtype.itemsize
    if kind == "f" and size in (2, 4, 8):
        return {2: "fp16", 4: "fp32", 8: "fp64"}[size]
    if kind in "iu" and size in (1, 2, 4, 8):
        return f"{'int' if kind == 'i' else 'uint'}{size * 8}"
    if kind == "b":
        return "bool"
    return str(dtype)


class _safetensors:
    """safe_open(path) as a context, its failures as located errors."""

    def __init__(self, path: str, ref: WeightRef):
        self.path, self.ref = path, ref

    def __enter__(self):
        try:
            from safetensors import safe_open
        except ImportError:
            raise WeightRefError(f"reading {self.ref.path} needs the safetensors package ({INSTALL})",
                                 self.ref.loc) from None
        open_regular(self.path, ".safetensors file").close()
        try:
            self._context = safe_open(self.path, framework="numpy")
            return self._context.__enter__()
        except Exception as e:  # noqa: BLE001 - the package's own error types vary by version
            raise WeightRefError(f"{self.ref.path} is not a .safetensors file ({e})", self.ref.loc) from None

    def __exit__(self, *exc):
        self._context.__exit__(*exc)


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


def check(ref: WeightRef, vtype, folder: str | None) -> TensorHeader:
    """The tensor's header, checked against the type (WeightRefError at the reference)."""
    header = read_header(ref, folder)
    problem = mismatch(ref, vtype, header)
    if problem is not None:
        raise WeightRefError(problem, ref.loc)
    return header


# ---- data ---------------------------------------------------------------------------------------

def _slices(shape: tuple, itemsize: int):
    """(start, stop) row ranges of about CHUNK_BYTES along the first axis."""
    if not shape:
        yield None
        return
    row = itemsize
    for d in shape[1:]:
        row *= d
    rows = max(1, CHUNK_BYTES // max(row, 1))
    for start in range(0, shape[0], rows):
        yield start, min(shape[0], start + rows)


def arrays(ref: WeightRef, folder: str | None, header: TensorHeader):
    """The tensor's elements as numpy arrays, a slice at a time, in C order."""
    path = file_path(ref, folder)
    if ref.format == "npy":
        yield from _npy_arrays(path, ref)
        return
    if header.dtype in _NEEDS_ML_DTYPES:
        try:
            import ml_dtypes  # noqa: F401 - gives numpy the bf16 and fp8 dtypes safetensors asks for
        except ImportError:
            raise WeightRefError(f"reading {header.dtype} tensors of {ref.path} needs the ml_dtypes package "
                                 f"({INSTALL})", ref.loc) from None
    bits = dtypes.by_name(header.dtype).bits if header.dtype in dtypes.BY_NAME else 32
    # The file is mapped while it is open: opening it for each slice lets go of what was read.
    for part in _slices(header.shape, max(1, bits // 8)):
        with _safetensors(path, ref) as f:
            yield f.get_tensor(ref.tensor) if part is None else f.get_slice(ref.tensor)[part[0]:part[1]]


def _npy_arrays(path: str, ref: WeightRef):
    shape, fortran, dtype, offset = _npy_layout(path, ref)
    if dtype.hasobject:
        raise WeightRefError(f"{ref.path} holds Python objects, not numbers", ref.loc)
    if fortran:   # rare: read through a mapping, a slice of rows at a time
        array = np.load(path, mmap_mode="r", allow_pickle=False)
        for part in _slices(shape, dtype.itemsize):
            yield np.ascontiguousarray(array if part is None else array[part[0]:part[1]])
        return
    row = 1
    for d in shape[1:]:
        row *= d
    with open_regular(path, ".npy file") as f:
        f.seek(offset)
        for part in _slices(shape, dtype.itemsize):
            count = row * (1 if part is None else part[1] - part[0])
            data = np.fromfile(f, dtype=dtype, count=count)
            if data.size != count:
                raise WeightRefError(f"{ref.path} is truncated: its header promises more data", ref.loc)
            yield data


def encoded(ref: WeightRef, folder: str | None, header: TensorHeader, target: str):
    """The tensor as `target` blob data, a slice of bytes at a time."""
    dt = dtypes.by_name(target)
    same = header.dtype == dt.name
    if dt.sub_byte:   # sub-byte elements share bytes across slices: the whole tensor at once
        whole = np.concatenate([a.reshape(-1) for a in arrays(ref, folder, header)])
        yield packing.pack(dt, _converted(ref, whole, header.dtype, dt))
        return
    for array in arrays(ref, folder, header):
        flat = np.ascontiguousarray(array).reshape(-1)
        if same:
            yield flat.astype(flat.dtype.newbyteorder("<"), copy=False).tobytes()
        else:
            yield packing.pack(dt, _converted(ref, flat, header.dtype, dt))


def _converted(ref: WeightRef, flat: np.ndarray, source: str, dt) -> np.ndarray:
    """`flat` as dt.numpy: floats rounded, integers checked to fit."""
    if dt.kind == "float":
        wide = flat.astype(np.float64 if flat.dtype == np.float64 else np.float32, copy=False)
        return wide.astype(dt.numpy, copy=False)
    if flat.size:
        low, high = dtypes_range(dt)
        if flat.min() < low or flat.max() > high:
            raise WeightRefError(f"{ref.path}{' tensor ' + repr(ref.tensor) if ref.tensor else ''} has values "
                                 f"outside {dt.name}'s range [{low}, {high}]", ref.loc)
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

    def __init__(self, program, folder: str | None, base_size: int):
        self.items: list[Planned] = []
        end = base_size
        for value, _ in references(program):
            ref = value.data
            header = check(ref, value.type, folder)
            t = value.type.wrapped if isinstance(value.type, StateType) else value.type
            count = t.element_count
            offset = align(end)
            self.items.append(Planned(value, ref, header, t.dtype, count, offset))
            end = offset + RECORD_SIZE + packing.packed_size(dtypes.by_name(t.dtype), count)
        self.folder = folder
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
            chunks = encoded(item.ref, self.folder, item.header, item.dtype)
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


def plan(program, folder: str | None, weight_file: str | None) -> Plan:
    """The plan for the program's references, appended to `weight_file` (None: a new file)."""
    base = os.path.getsize(weight_file) if weight_file and os.path.isfile(weight_file) else HEADER_SIZE
    return Plan(program, folder, base)
