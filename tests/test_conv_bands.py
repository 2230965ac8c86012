"""conv's direct path in C (issue 30): bands of output rows taken from a counter, the windows
laid out with the padding read in place and multiplied by NumPy's OpenBLAS from C. Its results
hold to the definition (held to float64) for strides, dilations, every padding, rectangular
kernels and batches, and agree with conv's NumPy path; what it does not take (groups, a plain
1x1 product, 1-D) keeps to that path; the C function runs just the bands its counter has left
and refuses what it cannot take."""

import numpy as np
import pytest

from miltext.interpreter import blas_threads, fast_kernels, parallel
from support.convolution import conv, definition
from support.native import require_native
from support.parts import takes_each_part_once

_fastkernels = require_native("miltext.interpreter._fastkernels")
RNG = np.random.default_rng(31)


@pytest.fixture
def counted(monkeypatch):
    """The conv_bands calls a run makes (with the C kernels on, one-row bands)."""
    calls = []

    class Counting:
        def __getattr__(self, name):
            fn = getattr(_fastkernels, name)
            return (lambda *args: calls.append(args) or fn(*args)) if name == "conv_bands" else fn
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    monkeypatch.setattr(fast_kernels, "_fastkernels", Counting())
    monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)
    monkeypatch.setattr(parallel, "COLUMNS", 1)                     # a band of one output row
    return calls


# (x's shape, the weight's, the attributes, the padding they mean, strides, dilations, a bias or not)
CASES = [
    ((1, 3, 30, 30), (8, 3, 7, 7), {"strides": "[2, 2]", "pad_type": '"custom"', "pad": "[3, 3, 3, 3]"},
     ((3, 3), (3, 3)), (2, 2), (1, 1), True),                                          # a stem
    ((2, 5, 13, 11), (7, 5, 3, 3), {"strides": "[2, 2]", "pad_type": '"same"'}, ((1, 1), (1, 1)), (2, 2), (1, 1),
     False),                                                                           # two images
    ((1, 6, 12, 12), (4, 6, 1, 1), {"strides": "[2, 2]", "pad_type": '"valid"'}, ((0, 0), (0, 0)), (2, 2), (1, 1),
     True),                                                                            # a downsample
    ((1, 4, 17, 19), (6, 4, 3, 2), {"strides": "[2, 3]", "dilations": "[2, 1]", "pad_type": '"custom"',
                                    "pad": "[0, 2, 3, 1]"}, ((0, 2), (3, 1)), (2, 3), (2, 1), True),
    ((1, 2, 9, 9), (3, 2, 5, 5), {"strides": "[1, 2]", "dilations": "[2, 2]", "pad_type": '"custom"',
                                  "pad": "[4, 4, 9, 9]"}, ((4, 4), (9, 9)), (1, 2), (2, 2), False),  # padding wider than x
    ((1, 3, 10, 10), (5, 3, 3, 3), {"dilations": "[2, 2]", "pad_type": '"same"'}, ((2, 2), (2, 2)), (1, 1), (2, 2),
     True),
]


@pytest.mark.parametrize("shape, weight, attrs, pads, strides, dilations, with_bias", CASES)
def test_bands_in_c_hold_to_the_definition(counted, shape, weight, attrs, pads, strides, dilations, with_bias):
    x = RNG.standard_normal(shape).astype(np.float32)
    w = RNG.standard_normal(weight).astype(np.float32)
    b = RNG.standard_normal(weight[0]).astype(np.float32) if with_bias else None
    got = conv(x, w, b, **attrs)
    assert len(counted) == 1                                        # the C bands ran
    want = definition(x, w, b, pads, strides, dilations)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.MonkeyPatch.context() as patch:                     # and the NumPy path agrees
        patch.setattr(fast_kernels, "_blas", False)
        np.testing.assert_allclose(conv(x, w, b, **attrs), got, rtol=1e-5, atol=1e-5)
    assert len(counted) == 1


def test_an_fp16_input_is_computed_in_fp32_and_keeps_its_dtype(counted):
    x = RNG.standard_normal((1, 4, 12, 12)).astype(np.float16)
    w = (RNG.standard_normal((4, 4, 3, 3)) / 6).astype(np.float32)
    got = conv(x, w, dtype="fp16", strides="[2, 2]", pad_type='"same"')
    assert len(counted) == 1 and got.dtype == np.float16
    np.testing.assert_allclose(got, definition(x, w, None, ((0, 1), (0, 1)), (2, 2), (1, 1)), rtol=2e-3, atol=2e-3)


def test_other_convs_keep_to_the_numpy_path(counted):
    x = RNG.standard_normal((1, 4, 16, 16)).astype(np.float32)
    grouped = RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)
    got = conv(x, grouped, strides="[2, 2]", pad_type='"valid"', groups=2)
    halves = [definition(x[:, 2 * g:2 * g + 2], grouped[2 * g:2 * g + 2], None, ((0, 0), (0, 0)), (2, 2), (1, 1))
              for g in range(2)]
    np.testing.assert_allclose(got, np.concatenate(halves, axis=1), rtol=1e-5, atol=1e-5)
    plain = RNG.standard_normal((6, 4, 1, 1)).astype(np.float32)     # a 1x1 product needs no windows
    np.testing.assert_allclose(conv(x, plain, pad_type='"valid"'),
                               definition(x, plain, None, ((0, 0), (0, 0)), (1, 1), (1, 1)), rtol=1e-5, atol=1e-5)
    line = RNG.standard_normal((1, 4, 16)).astype(np.float32)
    conv(line, RNG.standard_normal((3, 4, 3)).astype(np.float32), strides="[2]", pad_type='"valid"')
    assert counted == []


def test_a_band_too_big_for_the_c_scratch_keeps_to_the_numpy_path(counted, monkeypatch):
    """The C kernel refuses a band of more than fast_kernels.SCRATCH floats (a guard against a
    runaway size): a conv whose one-row band is bigger runs NumPy's path instead of failing, to
    the same result as a band that fits."""
    x = RNG.standard_normal((1, 3, 12, 12)).astype(np.float32)
    w = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
    monkeypatch.setattr(fast_kernels, "SCRATCH", 3 * 9 * 5 - 1)      # one row of 5 outputs: 135 floats
    got = conv(x, w, strides="[2, 2]", pad_type='"valid"')
    assert counted == []
    np.testing.assert_allclose(got, definition(x, w, None, ((0, 0), (0, 0)), (2, 2), (1, 1)), rtol=1e-5, atol=1e-5)
    monkeypatch.setattr(fast_kernels, "SCRATCH", 3 * 9 * 5)           # and a band that fits runs in C
    np.testing.assert_allclose(conv(x, w, strides="[2, 2]", pad_type='"valid"'), got, rtol=1e-5, atol=1e-5)
    assert len(counted) == 1


def test_bands_are_taken_from_a_shared_counter_until_none_is_left():
    """conv_bands runs the bands its counter has left: every one from 0, none once the counter
    is past them, the last two from 6; two threads sharing a counter run each band once
    between them, to the same bits as one thread."""
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    x = RNG.standard_normal((2, 3, 13, 11)).astype(np.float32)
    w = RNG.standard_normal((5, 3, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    geometry = np.array([3, 3, 2, 2, 1, 1, 1, 1], np.int64)         # 3x3, stride 2, one row and column of zeros
    # 7 x 6 outputs an image: 4 bands of 2 rows (the last of 1), 8 in all

    def bands(counter, y):
        return _fastkernels.conv_bands(x, w, b, y, counter, geometry, 2, 3, 13, 11, 5, 7, 6, 2)
    counter, y = np.zeros(1, np.int64), np.full((2, 5, 7, 6), np.nan, np.float32)
    assert bands(counter, y) == 8
    np.testing.assert_allclose(y, definition(x, w, b, ((1, 1), (1, 1)), (2, 2), (1, 1))[:, :, :7, :6],
                               rtol=1e-5, atol=1e-5)
    takes_each_part_once(bands, counter, y, 8, 6, np.s_[1, :, 4:])      # from 6: image 1's last 2 bands


def test_bands_in_c_refuse_what_they_cannot_take():
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    x, w, y = np.ones((1, 2, 6, 6), np.float32), np.ones((3, 2, 3, 3), np.float32), np.empty((1, 3, 6, 6), np.float32)
    same = np.array([3, 3, 1, 1, 1, 1, 1, 1], np.int64)

    def bands(*args, geometry=same, x=x, w=w, counter=None, bias=None):
        counter = np.zeros(1, np.int64) if counter is None else counter
        return _fastkernels.conv_bands(x, w, bias, y, counter, geometry, *args)
    assert bands(1, 2, 6, 6, 3, 6, 6, 1) == 6                      # what it takes
    np.testing.assert_allclose(y[0, 0, 1:-1, 1:-1], 18)             # all ones: 2 channels x 9 inside
    for geometry in ([3, 3, 1, 1, 1, 1, 1], [3, 3, 0, 1, 1, 1, 1, 1], [3, 3, 1, 1, 1, 0, 1, 1], [3, 3, 1, 1, 1, 1, -1, 1],
                     [3, 3, 1 << 40, 1, 1, 1, 1, 1], [3, 3, 1, 1, 1 << 40, 1, 1, 1], [3, 2, 1, 1, 1, 1, 1, 1]):
        with pytest.raises(ValueError):
            bands(1, 2, 6, 6, 3, 6, 6, 1, geometry=np.array(geometry, np.int64))
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 6, 0)                               # a band of no rows
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 5, 1)                               # y is not 3 x 6 x 5
    with pytest.raises(ValueError):
        bands(1, 2, 6, 5, 3, 6, 6, 1)                               # x is not 2 x 6 x 5
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, bias=np.ones(2, np.float32))
    with pytest.raises(TypeError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, counter=np.zeros(1))          # a float64 counter
    with pytest.raises(TypeError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, geometry=same.astype(np.float64))
    with pytest.raises(TypeError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, w=w.astype(np.float64))
    _fastkernels.use_blas(0, False)
    try:
        with pytest.raises(RuntimeError, match="no BLAS"):
            bands(1, 2, 6, 6, 3, 6, 6, 1)
    finally:
        _fastkernels.use_blas(*blas_threads.sgemm())
