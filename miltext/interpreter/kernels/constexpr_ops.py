"""Constants and the compressed weights of iOS16 and iOS18 (constexpr_*), decompressed."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ..args import Literal, const_misfit
from ..errors import RunError
from ..registry import kernel


@kernel("const")
def const(a):
    value = a("val")
    literal = a.bindings.get("val", [None])[0]
    if isinstance(value, np.ndarray) and isinstance(literal, Literal):
        misfit = const_misfit(a.op, literal.value, value)
        if misfit is not None:
            raise RunError(misfit)
    return value


def _blockwise(values, shape):
    """`values` (one per block) repeated to `shape`: each dim of `values` divides the shape's."""
    v = np.asarray(values)
    if v.ndim != len(shape):
        raise RunError(f"a per-block tensor of rank {v.ndim} for data of rank {len(shape)}")
    for axis, (n, size) in enumerate(zip(v.shape, shape)):
        if size % n:
            raise RunError(f"{n} blocks do not divide dim {axis} of size {size}")
        v = np.repeat(v, size // n, axis=axis)
    return v


def _shift_scale(data, scale, offset):
    """(data - offset) * scale, offset and scale one per block of data."""
    x = data.astype(np.float32)
    if offset is not None:
        x = x - _blockwise(offset, data.shape).astype(np.float32)
    return (x * _blockwise(scale, data.shape).astype(np.float32)).astype(scale.dtype)


@kernel("constexpr_blockwise_shift_scale")
def blockwise_shift_scale(a):
    return _shift_scale(np.asarray(a("data")), np.asarray(a("scale")), a("offset", None))


@kernel("constexpr_sparse_blockwise_shift_scale")
def sparse_blockwise_shift_scale(a):
    """The nonzero values (row-major in the mask) shift-scaled by the blocks of the dense tensor
    they sit in; the mask, and those values, for constexpr_sparse_to_dense."""
    mask = np.asarray(a("data_mask")).astype(bool)
    values = np.asarray(a("nonzero_data")).reshape(-1)
    dense = np.zeros(mask.shape, values.dtype)
    dense[mask] = values
    return a("data_mask"), _shift_scale(dense, np.asarray(a("scale")), a("offset", None))[mask]


@kernel("constexpr_affine_dequantize")
def affine_dequantize(a):
    q = np.asarray(a("quantized_data"))
    if q.ndim == 0:
        raise RunError("quantized_data is a scalar: it needs an axis for its scale and zero point")
    axis = a.scalar("axis") % q.ndim
    shape = [1] * q.ndim
    zero, scale = np.asarray(a("zero_point")), np.asarray(a("scale"))
    def along(v):
        if v.size == 1:
            return v.reshape(())
        s = list(shape)
        s[axis] = v.size
        return v.reshape(s)
    return ((q.astype(np.float32) - along(zero).astype(np.float32)) * along(scale).astype(np.float32)).astype(scale.dtype)


@kernel("constexpr_cast")
def constexpr_cast(a):
    return np.asarray(a("source_val")).astype(dtypes.by_name(str(a.scalar("output_dtype"))).numpy)


@kernel("constexpr_lut_to_dense")
def lut_to_dense(a):
    lut = np.asarray(a("lut"))
    indices = np.asarray(a("indices"))
    if a.has("shape"):   # iOS16: one table, indices packed in bytes, least significant bits first
        shape = a.ints("shape")
        a.allow(shape, max(lut.itemsize, 8))
        count = int(np.prod(shape))
        if lut.size == 0 or lut.size & (lut.size - 1):
            raise RunError(f"a palette of {lut.size} values: its size must be a power of two")
        bits = int(np.log2(lut.size))
        unpacked = np.unpackbits(indices.astype(np.uint8), bitorder="little")[:count * bits]
        idx = (unpacked.reshape(count, bits) << np.arange(bits)).sum(axis=1)
        return lut.reshape(-1)[idx].reshape(shape)
    # iOS18: lut (*blocks, 2^nbits, vector_size); indices of the data's shape
    rank = indices.ndim
    vector = lut.shape[-1]
    blocks = lut.shape[:rank]
    grids = np.indices(indices.shape)
    block_index = tuple(g // (size // n) for g, size, n in zip(grids, indices.shape, blocks))
    values = lut[block_index + (indices.astype(np.int64),)]      # (*shape, vector)
    if vector == 1:
        return values[..., 0]
    # each index's vector fills `vector` places in a row along vector_axis
    axis = a.scalar("vector_axis", None)
    if axis is None:
        raise RunError(f"a palette of vectors ({vector} values each) needs vector_axis")
    axis %= rank
    shape = list(indices.shape)
    shape[axis] *= vector
    return np.moveaxis(values, -1, axis + 1).reshape(shape)


@kernel("constexpr_sparse_to_dense")
def sparse_to_dense(a):
    values = np.asarray(a("nonzero_data"))
    mask = np.asarray(a("mask"))
    if a.has("shape"):   # iOS16: the mask packed in bytes
        shape = a.ints("shape")
        a.allow(shape, max(values.itemsize, 1))
        mask = np.unpackbits(mask.astype(np.uint8), bitorder="little")[:int(np.prod(shape))].reshape(shape)
    out = np.zeros(mask.shape, values.dtype)
    out[mask.astype(bool)] = values.reshape(-1)
    return out


@kernel("constexpr_lut_to_sparse")
def lut_to_sparse(a):
    """iOS18's palettized sparse weight: the palette looked up for the nonzero places only; the
    mask and those values, for constexpr_sparse_to_dense."""
    mask = np.asarray(a("indices_mask"))
    indices = np.asarray(a("indices_nonzero_data")).reshape(-1).astype(np.int64)
    lut = np.asarray(a("lut"))
    places = np.nonzero(mask)                       # row-major, as the nonzero data is stored
    blocks = lut.shape[:mask.ndim]
    block_index = tuple(p // (size // n) for p, size, n in zip(places, mask.shape, blocks))
    values = lut[block_index + (indices,)]          # (nonzero count, vector size)
    vector = lut.shape[-1]
    if vector == 1:
        return mask, values[:, 0]
    # each nonzero place becomes `vector` places in a row along vector_axis, in mask and data
    axis = a.scalar("vector_axis", None)
    if axis is None:
        raise RunError(f"a palette of vectors ({vector} values each) needs vector_axis")
    axis %= mask.ndim
    expanded = np.repeat(mask, vector, axis=axis)
    dense = np.zeros(expanded.shape, lut.dtype)
    for k in range(vector):
        at = list(places)
        at[axis] = places[axis] * vector + k
        dense[tuple(at)] = values[:, k]
    return expanded, dense[expanded.astype(bool)]
