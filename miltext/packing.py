"""Element arrays to bytes and back, exactly as MIL stores them.

`TensorValue.bytes` and weight blobs hold elements little-endian; sub-byte dtypes are packed
LSB-first (element i occupies bits [i*n, (i+1)*n) of the stream, the last byte zero-padded).
bf16 and fp8 have no numpy dtype: they decode to float32 (exactly) and encode by
round-to-nearest-even. Every function here is vectorized: no per-element Python.
"""
from __future__ import annotations

import math
import struct

from .dtypes import DType
from .lazy import LazyTable, numpy as np

_FP8_FORMATS = {"fp8e4m3fn": (4, 3, True), "fp8e5m2": (5, 2, False)}   # exponent, mantissa bits, finite only


def _fp8_values(exp_bits: int, man_bits: int, finite_only: bool) -> list:
    """The value of each of the 256 fp8 bit patterns (plain Python: the native printer's tables
    are made from them without numpy)."""
    bias = (1 << (exp_bits - 1)) - 1
    top_exp, top_man = (1 << exp_bits) - 1, (1 << man_bits) - 1
    values = []
    for code in range(256):
        sign = -1.0 if code & 0x80 else 1.0
        exp, man = (code >> man_bits) & top_exp, code & top_man
        if exp == top_exp and (man == top_man if finite_only else True):
            # e4m3fn: only S.1111.111 is NaN, no infinities; e5m2: IEEE-like
            values.append(sign * math.inf if not finite_only and man == 0 else math.nan)
        elif exp == 0:
            values.append(sign * man / (1 << man_bits) * 2.0 ** (1 - bias))
        else:
            values.append(sign * (1.0 + man / (1 << man_bits)) * 2.0 ** (exp - bias))
    return values


def fp8_table_bytes(name: str) -> bytes:
    """The float32 value of each bit pattern of fp8 dtype `name`, as 256 little-endian floats."""
    return struct.pack("<256f", *_fp8_values(*_FP8_FORMATS[name]))


# float32 value of each of the 256 fp8 bit patterns
FP8_TABLES = LazyTable(_FP8_FORMATS, lambda name: np.frombuffer(fp8_table_bytes(name), "<f4").astype(np.float32))

# The NaN each float dtype writes for a plain `nan`; any other NaN keeps its bits in the text.
CANONICAL_NAN_BITS = {"fp16": 0x7E00, "fp32": 0x7FC00000, "fp64": 0x7FF8000000000000,
                      "bf16": 0x7FC0, "fp8e4m3fn": 0x7F, "fp8e5m2": 0x7F}

# Unsigned integer type holding the raw bits of one element of each float dtype.
_BITS_TYPES = {"fp16": "uint16", "fp32": "uint32", "fp64": "uint64", "bf16": "uint16",
               "fp8e4m3fn": "uint8", "fp8e5m2": "uint8"}
BITS_DTYPE = LazyTable(_BITS_TYPES, lambda name: getattr(np, _BITS_TYPES[name]))


def float_bits(dtype: DType, values: np.ndarray) -> np.ndarray:
    """Raw bit patterns of float `values` (already of dtype.numpy) encoded as `dtype`."""
    if dtype.name in ("fp16", "fp32", "fp64"):
        return values.view(BITS_DTYPE[dtype.name])
    if dtype.name == "bf16":
        return _bf16_bits(values.astype(np.float32))
    return _fp8_bits(dtype.name, values.astype(np.float32))


def bits_to_float(dtype: DType, bits: np.ndarray) -> np.ndarray:
    """Decoded float values (dtype.numpy) of raw bit patterns."""
    bits = bits.astype(BITS_DTYPE[dtype.name], copy=False)
    if dtype.name in ("fp16", "fp32", "fp64"):
        return bits.view(dtype.numpy)
    if dtype.name == "bf16":
        return (bits.astype(np.uint32) << 16).view(np.float32)
    values = FP8_TABLES[dtype.name][bits]
    nan = np.isnan(values)
    if nan.any():  # keep which NaN it was, in the float32 payload, for _fp8_bits to restore
        raw = values.view(np.uint32)
        raw[nan] = 0x7FC00000 | bits[nan].astype(np.uint32)
    return values


def _bf16_bits(values: np.ndarray) -> np.ndarray:
    u = values.view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = np.isnan(values)
    top = u[nan] >> 16
    top[(top & 0x7F) == 0] |= 0x40  # a payload only in the low half would turn into inf
    rounded[nan] = top
    return rounded.astype(np.uint16)


def _fp8_bits(name: str, values: np.ndarray) -> np.ndarray:
    table = FP8_TABLES[name]
    codes = np.arange(256, dtype=np.uint8)
    finite = ~np.isnan(table)
    order = np.argsort(table[finite], kind="stable")
    sorted_vals = table[finite][order].astype(np.float64)
    sorted_codes = codes[finite][order]
    v = values.astype(np.float64)
    with np.errstate(invalid="ignore"):
        return _nearest_fp8(name, v, sorted_vals, sorted_codes)


def _nearest_fp8(name, v, sorted_vals, sorted_codes):
    hi = np.clip(np.searchsorted(sorted_vals, v), 1, len(sorted_vals) - 1)
    lo = hi - 1
    pick_hi = (sorted_vals[hi] - v) < (v - sorted_vals[lo])
    tie = (sorted_vals[hi] - v) == (v - sorted_vals[lo])
    pick_hi |= tie & (sorted_codes[hi] % 2 == 0)  # ties to even mantissa
    out = np.where(pick_hi, sorted_codes[hi], sorted_codes[lo])
    exact_zero = v == 0
    out[exact_zero] = np.where(np.signbit(v[exact_zero]), 0x80, 0x00)
    nan = np.isnan(v)
    if nan.any():  # a NaN that came from an fp8 code carries it in its payload
        payload = (v[nan].astype(np.float32).view(np.uint32) & 0xFF).astype(np.uint8)
        fallback = CANONICAL_NAN_BITS[name] | (np.signbit(v[nan]).astype(np.uint8) << 7)
        out[nan] = np.where(np.isnan(FP8_TABLES[name][payload]), payload, fallback)
    # Infinities: e5m2 has them; e4m3fn has none, and an infinity becomes its NaN.
    table = FP8_TABLES[name]
    for sign, value in ((0x00, np.inf), (0x80, -np.inf)):
        codes = np.flatnonzero(table == value)
        out[v == value] = codes[0] if codes.size else CANONICAL_NAN_BITS[name] | sign
    return out.astype(np.uint8)


def packed_size(dtype: DType, count: int) -> int:
    return (count * dtype.bits + 7) // 8


def pack(dtype: DType, values: np.ndarray) -> bytes:
    """The little-endian byte form of `values` (flattened, C order) as `dtype`."""
    flat = np.ascontiguousarray(values).reshape(-1)
    if dtype.kind == "float":
        return float_bits(dtype, flat.astype(dtype.numpy, copy=False)).astype(
            np.dtype(BITS_DTYPE[dtype.name]).newbyteorder("<")).tobytes()
    if not dtype.sub_byte:
        return flat.astype(np.dtype(dtype.numpy).newbyteorder("<")).tobytes()
    n = dtype.bits
    unsigned = flat.astype(np.int64) & ((1 << n) - 1)
    bits = ((unsigned[:, None] >> np.arange(n)) & 1).astype(np.uint8).reshape(-1)
    return np.packbits(bits, bitorder="little").tobytes()


def unpack(dtype: DType, raw: bytes, count: int | None = None) -> np.ndarray | None:
    """Elements of `raw` as dtype.numpy, or None when `raw` is not exactly `count` packed
    elements (wrong length, or non-zero padding bits) — such bytes are kept raw instead."""
    if dtype.sub_byte:
        if count is None or len(raw) != packed_size(dtype, count):
            return None
        n = dtype.bits
        bits = np.unpackbits(np.frombuffer(raw, np.uint8), bitorder="little")
        if bits[count * n:].any():
            return None
        weights = (1 << np.arange(n)).astype(np.int64)
        values = bits[: count * n].reshape(count, n).astype(np.int64) @ weights
        if dtype.kind == "int":
            values = np.where(values >= 1 << (n - 1), values - (1 << n), values)
        return values.astype(dtype.numpy)
    width = dtype.bits // 8
    if len(raw) % width or (count is not None and len(raw) != count * width):
        return None
    if dtype.kind == "float":
        bits = np.frombuffer(raw, np.dtype(BITS_DTYPE[dtype.name]).newbyteorder("<"))
        return bits_to_float(dtype, bits.astype(BITS_DTYPE[dtype.name]))
    return np.frombuffer(raw, np.dtype(dtype.numpy).newbyteorder("<")).astype(dtype.numpy)
