"""What a `constexpr_*` op does to the tensors it is given, read from their types alone (never
their values): the compression scheme a converter chose, as coremltools' op definitions
(iOS16 constexpr_ops, iOS18 compression) define it.

    palette       constexpr_lut_to_dense, constexpr_lut_to_sparse: n-bit indices into a table of
                  2^n entries; iOS18's table has one palette per block of the tensor, its shape
                  (*blocks, 2^n, vector size), each dim of the indices divided by the block count
    shift-scale   constexpr_blockwise_shift_scale, constexpr_sparse_blockwise_shift_scale:
                  scale * (data - offset), one scale per block, block size = data dim / scale dim
    affine        constexpr_affine_dequantize (iOS16): scale * (data - zero_point), one scale
                  for the tensor or one per index of `axis`
    sparse        constexpr_sparse_to_dense: the nonzero values and a bit mask
    cast          constexpr_cast: fp16 stored, another dtype given out
"""
from __future__ import annotations

from dataclasses import dataclass

from .. import dtypes
from ..ir import TensorType

PALETTE, SHIFT_SCALE, AFFINE, SPARSE, CAST = "palette", "shift-scale", "affine", "sparse", "cast"

# op type -> (scheme, the input holding the stored elements)
COMPRESSIONS = {
    "constexpr_lut_to_dense": (PALETTE, "indices"),
    "constexpr_lut_to_sparse": (PALETTE, "indices_nonzero_data"),
    "constexpr_blockwise_shift_scale": (SHIFT_SCALE, "data"),
    "constexpr_sparse_blockwise_shift_scale": (SHIFT_SCALE, "nonzero_data"),
    "constexpr_affine_dequantize": (AFFINE, "quantized_data"),
    "constexpr_sparse_to_dense": (SPARSE, "nonzero_data"),
    "constexpr_cast": (CAST, "source_val"),
}
# Inputs that say how to decompress rather than hold stored elements.
PARAMETERS = frozenset({"name", "axis", "vector_axis", "output_dtype", "shape"})


@dataclass
class Stage:
    """One constexpr op of a compressed weight."""
    op: str
    scheme: str
    bits: int | None = None          # bits of a stored element (an index, a quantized value)
    source: str | None = None        # the stored dtype (int4, uint4, fp16, ...)
    block: tuple | None = None       # elements per block along each dim (palette, shift-scale)
    blocks: tuple | None = None      # blocks along each dim
    vector: int = 1                  # a palette's vector size
    axis: int | None = None          # affine: the axis of its scales (None: one for the tensor)
    offset: bool = False             # shift-scale, affine: a zero point / offset is stored
    density: float | None = None     # sparse: nonzero elements / all elements

    def text(self) -> str:
        if self.scheme == PALETTE:
            vector = f" of {self.vector}-vectors" if self.vector > 1 else ""
            return f"{self.bits}-bit palette{vector}{_granularity(self.blocks, self.block)}"
        if self.scheme == SHIFT_SCALE:
            kind = "affine" if self.offset else "symmetric"
            return f"{self.source} {kind} shift-scale{_granularity(self.blocks, self.block)}"
        if self.scheme == AFFINE:
            where = ", per tensor" if self.axis is None else f", per channel (axis {self.axis})"
            return f"{self.source} affine{where}"
        if self.scheme == SPARSE:
            return "sparse" if self.density is None else f"sparse, {100 * self.density:.1f}% nonzero"
        return f"{self.source} cast"

    def as_dict(self) -> dict:
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in vars(self).items()}


def _granularity(blocks, block) -> str:
    """How a table or scale is shared: by the whole tensor, a channel, or blocks of one."""
    if blocks is None:
        return ""
    split = [i for i, n in enumerate(blocks) if n > 1]
    grouped = [i for i in split if block[i] > 1]
    if not split:
        return ", per tensor"
    if not grouped:
        return f", per channel (axis {', '.join(map(str, split))})"
    if len(grouped) == 1:
        return f", per block of {block[grouped[0]]} along axis {grouped[0]}"
    return f", per block of {'x'.join(map(str, block))}"


def stage(op, input_type) -> Stage | None:
    """The Stage of `op`, a constexpr op (None for another op); `input_type(op, key)` is the
    type of its input `key` (None when not given)."""
    known = COMPRESSIONS.get(op.type)
    if known is None:
        return None
    scheme, stored = known
    data = _tensor(input_type(op, stored))
    found = Stage(op.type, scheme, source=data and data.dtype, bits=data and _bits(data.dtype))
    if scheme == PALETTE:
        _palette(found, op, data, input_type)
    elif scheme == SHIFT_SCALE:
        shape = data and data.shape
        if op.type == "constexpr_sparse_blockwise_shift_scale":
            mask = _tensor(input_type(op, "data_mask"))
            shape = mask and mask.shape
        found.offset = input_type(op, "offset") is not None
        _blocked(found, shape, _tensor(input_type(op, "scale")), 0)
    elif scheme == AFFINE:
        scale = _tensor(input_type(op, "scale"))
        found.offset = True
        if scale is not None and scale.shape and data is not None and scale.shape != (1,):
            axis = _int_input(op, "axis")
            found.axis = axis % len(data.shape) if axis is not None and data.shape else axis
    elif scheme == SPARSE:
        found.bits = found.source = None
        found.density = _density(op, data, input_type)
    return found


def _palette(found: Stage, op, data, input_type) -> None:
    lut = _tensor(input_type(op, "lut"))
    if lut is None or not lut.is_static:
        return
    if op.type == "constexpr_lut_to_dense" and len(lut.shape) == 1:   # iOS16: one table of 2^n
        found.bits = max(lut.shape[0] - 1, 0).bit_length()
        found.blocks = found.block = None
        return
    found.vector = lut.shape[-1]
    shape = data and data.shape
    if op.type == "constexpr_lut_to_sparse":
        mask = _tensor(input_type(op, "indices_mask"))
        shape = mask and mask.shape
    _blocked(found, shape, lut, 2)


def _blocked(found: Stage, shape, per_block, trailing: int) -> None:
    """Blocks and block sizes of a tensor of `shape` whose `per_block` tensor (a scale, a
    table) has one entry per block in its leading dims (and `trailing` dims of its own)."""
    if per_block is None or shape is None or not per_block.is_static:
        return
    lead = per_block.shape[:len(per_block.shape) - trailing]
    if len(lead) != len(shape) or not all(type(d) is int for d in shape) or 0 in lead:
        return
    found.blocks = tuple(lead)
    found.block = tuple(d // n for d, n in zip(shape, lead))


def _density(op, nonzero, input_type) -> float | None:
    out = _tensor(op.outputs[0].type) if op.outputs else None
    total = out.element_count if out is not None else None
    if nonzero is None or not nonzero.is_static or not total:
        return None
    return nonzero.element_count / total


def _int_input(op, key):
    from ..ir import Value
    found = op.inputs.get(key) or ([op.attributes[key]] if key in op.attributes else [])
    if len(found) == 1 and isinstance(found[0], Value):
        try:
            return int(found[0].array.reshape(-1)[0])
        except (TypeError, ValueError, IndexError, AttributeError):
            return None
    return None


def _tensor(t):
    return t if isinstance(t, TensorType) else None


def _bits(dtype: str) -> int | None:
    try:
        return dtypes.by_name(dtype).bits or None
    except KeyError:
        return None
