"""Compressed weights (constexpr_*): the dense weight's shape comes from the stored data (or,
in iOS16's ops, a `shape` parameter), its dtype from the lut, scale or sparse data."""
from __future__ import annotations

from ..errors import Unsupported
from ..registry import rule
from ..shapes import tensor
from ..symbols import known


@rule("constexpr_affine_dequantize")
def affine_dequantize(ops):
    return [tensor(ops.tensor("scale").dtype, ops.tensor("quantized_data").shape)]


@rule("constexpr_blockwise_shift_scale")
def blockwise_shift_scale(ops):
    return [tensor(ops.tensor("scale").dtype, ops.tensor("data").shape)]


@rule("constexpr_cast")
def cast(ops):
    return [tensor(ops.dtype("output_dtype"), ops.tensor("source_val").shape)]


@rule("constexpr_lut_to_dense")
def lut_to_dense(ops):
    lut = ops.tensor("lut")
    if ops.has("shape"):                       # iOS16: the shape is a parameter
        return [tensor(lut.dtype, ops.ints("shape"))]
    shape = list(ops.tensor("indices").shape)
    vector_size = lut.shape[-1]
    if vector_size != 1:                      # vectors of a palette lie along vector_axis
        axis = ops.scalar("vector_axis", of=int)
        if not known(shape[axis]) or not known(vector_size):
            raise Unsupported("an unknown vector size")
        shape[axis] *= vector_size
    return [tensor(lut.dtype, shape)]


@rule("constexpr_sparse_to_dense")
def sparse_to_dense(ops):
    dtype = ops.tensor("nonzero_data").dtype
    if ops.has("shape"):                       # iOS16: the mask is packed bits
        return [tensor(dtype, ops.ints("shape"))]
    return [tensor(dtype, ops.tensor("mask").shape)]


@rule("constexpr_lut_to_sparse")
def lut_to_sparse(ops):
    mask, nonzero = ops.tensor("indices_mask"), ops.tensor("indices_nonzero_data")
    lut = ops.tensor("lut")
    if lut.shape[-1] != 1:
        raise Unsupported("palettes of vectors")
    return [tensor(mask.dtype, mask.shape), tensor(lut.dtype, nonzero.shape)]
