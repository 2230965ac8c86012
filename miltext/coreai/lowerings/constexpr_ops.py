"""Compressed weights kept compressed: MIL's constexpr ops map to the dialect's decompression
ops, whose operands are stored as they are (int4/uint4/uint2 packed), so the .aimodel holds
about the bytes the .mlpackage holds. MIL's 1-, 3- and 6-bit palette indices have no Core AI
type: they widen to 2, 4 and 8 bits, the palette padded to match."""
from __future__ import annotations

import numpy as np

from ..errors import PortError
from ..table import lowers
from .common import name_of

_WIDER = {"uint1": ("uint2", 4), "uint3": ("uint4", 16), "uint6": ("uint8", 256),
          "uint2": ("uint2", 4), "uint4": ("uint4", 16), "uint8": ("uint8", 256)}


def _raw(low, op, key: str, dtype: str | None = None, hint: str = "w"):
    """A const input as stored (its own dtype unless `dtype`), or a value computed before."""
    b = low.binding(op, key)
    if isinstance(b, str) and b in low.values:
        return low.values[b]
    t = low.mil_type(b)
    value = np.asarray(low.known_value(op, key)).reshape(t.shape)
    return low.constant(value, dtype or t.dtype, hint)


@lowers("constexpr_lut_to_dense")
def lut_to_dense(low, op):
    if not low.has(op, "indices") or low.has(op, "shape"):
        raise PortError("constexpr_lut_to_dense of iOS16 (a 1-D palette) has no Core AI lowering; "
                        "the iOS18 form ports")
    itype = low.mil_type(low.binding(op, "indices")).dtype
    wide, palette = _WIDER.get(itype, (None, 0))
    if wide is None:
        raise PortError(f"palette indices of {itype} have no Core AI type")
    indices = _raw(low, op, "indices", wide, name_of(op) + "_indices")
    lut = low.tensor(op, "lut")
    if lut.shape[-2] != palette:         # a narrower palette: pad it to the wider index type
        if not low.is_known(op, "lut"):
            raise PortError(f"a palette of {lut.shape[-2]} entries computed at run time cannot widen")
        raw = np.asarray(low.known_value(op, "lut"))
        pad = [(0, 0)] * raw.ndim
        pad[-2] = (0, palette - raw.shape[-2])
        lut = low.constant(np.pad(raw, pad), lut.dtype, name_of(op) + "_lut")
    axis = int(low.known_value(op, "vector_axis", 0) or 0)
    low.bind(op, low.emit("lut_to_dense", [indices, lut, low.constant(np.asarray(axis, np.int16), "int16", "axis")], low.out(op),
                          hint=name_of(op)))


@lowers("constexpr_blockwise_shift_scale")
def blockwise_shift_scale(low, op):
    data = _raw(low, op, "data", hint=name_of(op) + "_data") if low.is_known(op, "data") else low.tensor(op, "data")
    scale = low.tensor(op, "scale")
    dtype, shape = low.out(op)
    if low.has(op, "offset"):
        offset1 = _raw(low, op, "offset", hint="offset")
    else:
        offset1 = low.constant(np.zeros(scale.shape), data.dtype, "offset")
    offset2 = low.constant(np.zeros(scale.shape), dtype, "offset2")
    low.bind(op, low.emit("blockwise_shift_scale", [data, scale, offset1, offset2], (dtype, shape),
                          hint=name_of(op)))


@lowers("constexpr_affine_dequantize")
def affine_dequantize(low, op):
    data = _raw(low, op, "quantized_data", hint=name_of(op) + "_data")
    dtype, shape = low.out(op)
    scale = np.asarray(low.known_value(op, "scale"))
    zero = np.asarray(low.known_value(op, "zero_point"))
    axis = int(low.known_value(op, "axis", 0)) % len(shape)
    n = shape[axis]
    scale = np.broadcast_to(scale.reshape(-1), (n,)) if scale.size in (1, n) else scale
    zero = np.broadcast_to(zero.reshape(-1), (n,)) if zero.size in (1, n) else zero
    operands = [data, low.constant(scale, dtype, "scale"), low.constant(zero, data.dtype, "zero_point"),
                low.constant(np.zeros(n), dtype, "offset2"), low.ints(axis, "axis")]
    low.bind(op, low.emit("dequantize", operands, (dtype, shape), hint=name_of(op)))
