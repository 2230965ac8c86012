"""Every bit pattern of the narrow float dtypes prints and reads back to itself: finite values,
infinities, -0.0 and every NaN payload."""
import numpy as np
import pytest

import miltext
from miltext import packing
from miltext.ir import Program, TensorType, Value
from miltext.ir.values import TensorData


@pytest.mark.parametrize("name", ["fp16", "bf16", "fp8e4m3fn", "fp8e5m2"])
def test_every_bit_pattern_survives_text(name):
    width = np.dtype(packing.BITS_DTYPE[name])
    codes = np.arange(1 << (8 * width.itemsize)).astype(width)
    raw = codes.astype(width.newbyteorder("<")).tobytes()
    value = Value(TensorType(name, (len(codes),)), TensorData("bytes", raw))
    program = Program(attributes={"all": value})
    text = miltext.dumps(program)
    assert "b64" in text  # long tensors go as one exact token...
    back = miltext.loads(text).attributes["all"]
    assert back.data.values == raw
    # ...and element by element as decimals, in slices short enough to be written out.
    for start in range(0, len(codes), 64):
        piece = Value(TensorType(name, (64,)), TensorData("bytes", raw[start * width.itemsize:(start + 64) * width.itemsize]))
        text = miltext.dumps(Program(attributes={"p": piece}))
        assert "b64" not in text
        assert miltext.loads(text).attributes["p"].data.values == piece.data.values, text


def test_fp32_special_values_print_as_words_or_bits():
    bits = np.array([0x7FC00000, 0x7FC00001, 0xFFC00000, 0x7F800000, 0xFF800000, 0x80000000, 1], np.uint32)
    value = Value(TensorType("fp32", (7,)), TensorData("floats", bits.view(np.float32)))
    text = miltext.dumps(Program(attributes={"v": value}))
    assert "[nan, nan(0x7fc00001), nan(0xffc00000), inf, -inf, -0.0, 1e-45]" in text
    assert miltext.loads(text).attributes["v"].data == value.data
