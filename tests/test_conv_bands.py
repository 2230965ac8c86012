"""conv's direct path in C (issue 30): parts (bands of output rows, or blocks of a band's output
channels) taken from a counter, the windows laid out with the padding read in place and
multiplied by NumPy's OpenBLAS from C. Its results hold to the definition (held to float64) for
strides, dilations, every padding, rectangular kernels, batches and narrow images, and agree
with conv's NumPy path; a layer of too few rows for two threads shares blocks of its output
channels; what it does not take (groups, a plain 1x1 product, 1-D) keeps to that path; the C
function runs just the parts its counter has left and refuses what it cannot take."""

import os

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
    # narrow images of stride 1, as wide out as in (each window plane one shifted copy): a late
    # layer, uneven padding, padding past the input, dilated rows, a row of one value
    ((1, 8, 7, 7), (6, 8, 3, 3), {"pad_type": '"same"'}, ((1, 1), (1, 1)), (1, 1), (1, 1), True),
    ((2, 3, 5, 6), (4, 3, 4, 3), {"pad_type": '"custom"', "pad": "[2, 1, 0, 2]"}, ((2, 1), (0, 2)), (1, 1), (1, 1),
     True),
    ((1, 2, 3, 4), (3, 2, 5, 5), {"pad_type": '"custom"', "pad": "[5, 3, 2, 2]"}, ((5, 3), (2, 2)), (1, 1), (1, 1),
     False),
    ((1, 3, 9, 5), (2, 3, 3, 3), {"dilations": "[3, 1]", "pad_type": '"custom"', "pad": "[3, 3, 1, 1]"},
     ((3, 3), (1, 1)), (1, 1), (3, 1), True),
    ((1, 4, 6, 1), (5, 4, 3, 1), {"pad_type": '"same"'}, ((1, 1), (0, 0)), (1, 1), (1, 1), True),
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
    # 7 x 6 outputs an image: 4 bands of at most 2 rows, even (rows 0, 1-2, 3-4, 5-6), 8 in all

    def bands(counter, y):
        return _fastkernels.conv_bands(x, w, b, y, counter, geometry, 2, 3, 13, 11, 5, 7, 6, 2, 5, False)
    counter, y = np.zeros(1, np.int64), np.full((2, 5, 7, 6), np.nan, np.float32)
    assert bands(counter, y) == 8
    np.testing.assert_allclose(y, definition(x, w, b, ((1, 1), (1, 1)), (2, 2), (1, 1))[:, :, :7, :6],
                               rtol=1e-5, atol=1e-5)
    takes_each_part_once(bands, counter, y, 8, 6, np.s_[1, :, 3:])      # from 6: image 1's last 2 bands


def test_random_geometries_hold_to_the_definition():
    """400 small convs of random kernels, strides, dilations, padding (most as wide out as in,
    the shifted copies' case), bands and blocks, some with a relu folded in, each held to the
    definition."""
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    rng, ran = np.random.default_rng(5), 0
    while ran < 400:
        n, c, h, w, o = (int(v) for v in rng.integers(1, [3, 5, 12, 12, 7]))
        kh, kw, dh, dw = (int(v) for v in rng.integers(1, [6, 6, 4, 3]))
        sh, sw = (1 if rng.random() < 0.7 else int(rng.integers(2, 4)) for _ in range(2))
        if sw == 1 and rng.random() < 0.6:                          # as wide out as in
            left = int(rng.integers(0, (kw - 1) * dw + 1))
            right = (kw - 1) * dw - left
        else:
            left, right = (int(v) for v in rng.integers(0, 6, 2))
        top, bottom = (int(v) for v in rng.integers(0, 7, 2))
        ho, wo = (h + top + bottom - (kh - 1) * dh - 1) // sh + 1, (w + left + right - (kw - 1) * dw - 1) // sw + 1
        if ho <= 0 or wo <= 0:
            continue
        band, block, relu = int(rng.integers(1, ho + 2)), int(rng.integers(1, o + 1)), bool(rng.random() < 0.3)
        x, b = rng.standard_normal((n, c, h, w)).astype(np.float32), rng.standard_normal(o).astype(np.float32)
        weight = rng.standard_normal((o, c, kh, kw)).astype(np.float32)
        y = np.full((n, o, ho, wo), np.nan, np.float32)
        geometry = np.array([kh, kw, sh, sw, dh, dw, top, left], np.int64)
        _fastkernels.conv_bands(x, weight, b, y, np.zeros(1, np.int64), geometry, n, c, h, w, o, ho, wo, band, block,
                                relu)
        want = definition(x, weight, b, ((top, bottom), (left, right)), (sh, sw), (dh, dw))
        want = np.maximum(want, 0) if relu else want
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4, err_msg=str(geometry))
        ran += 1


def test_blocks_of_a_bands_output_channels_are_taken_from_the_counter_too():
    """With blocks of 2 of 5 output channels, each band is 3 parts (the last of 1 channel), in
    order: from 7, the last 2 parts run (band 2's last 2 blocks: channels 2-4 of its rows 4-6),
    the windows laid out for them alone (one product of 3 channels, where from 0 the band's 5
    were one: the BLAS may round its last bit otherwise); two threads run each part once, to
    the same bits."""
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    x = RNG.standard_normal((1, 3, 7, 7)).astype(np.float32)
    w = RNG.standard_normal((5, 3, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(5).astype(np.float32)
    geometry = np.array([3, 3, 1, 1, 1, 1, 1, 1], np.int64)         # 3x3, stride 1, "same"
    # 7 x 7 outputs: 3 bands of at most 3 rows, even (rows 0-1, 2-3, 4-6), 3 blocks each, 9 parts

    def parts(counter, y):
        return _fastkernels.conv_bands(x, w, b, y, counter, geometry, 1, 3, 7, 7, 5, 7, 7, 3, 2, False)
    counter, y = np.zeros(1, np.int64), np.full((1, 5, 7, 7), np.nan, np.float32)
    assert parts(counter, y) == 9
    np.testing.assert_allclose(y, definition(x, w, b, ((1, 1), (1, 1))), rtol=1e-5, atol=1e-5)
    takes_each_part_once(parts, counter, y, 9, 7, np.s_[0, 2:, 4:], same_bits=False)


def test_a_layer_of_few_rows_shares_blocks_of_its_output_channels_on_two_threads(counted, monkeypatch):
    """A 7x7 layer of 160 outputs is one band (fewer than the 3 parts a thread takes): on two
    threads its output channels are shared in a block for each thread (2 of 80: each block
    multiplies all the band's windows, which the BLAS packs again for each), on one it is one
    part; both hold to the definition."""
    setter = blas_threads._local_setter()
    if setter is None:
        pytest.skip("a BLAS other than NumPy's bundled OpenBLAS lends no threads")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    monkeypatch.setattr(parallel, "COLUMNS", 128)                   # the band as a run makes it
    x = RNG.standard_normal((1, 96, 7, 7)).astype(np.float32)
    w = (RNG.standard_normal((160, 96, 3, 3)) / 24).astype(np.float32)
    b = RNG.standard_normal(160).astype(np.float32)
    want = definition(x, w, b, ((1, 1), (1, 1)))
    for threads, block in ((2, 80), (1, 160)):
        before = setter(threads)
        try:
            got = conv(x, w, b, pad_type='"same"')
        finally:
            setter(before)
        band, taken = counted[-1][-4:-2]
        assert band >= 7 and taken == block                         # one band of all 7 rows; its block
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_bands_in_c_refuse_what_they_cannot_take():
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    x, w, y = np.ones((1, 2, 6, 6), np.float32), np.ones((3, 2, 3, 3), np.float32), np.empty((1, 3, 6, 6), np.float32)
    same = np.array([3, 3, 1, 1, 1, 1, 1, 1], np.int64)

    def bands(*args, geometry=same, x=x, w=w, counter=None, bias=None):
        counter = np.zeros(1, np.int64) if counter is None else counter
        return _fastkernels.conv_bands(x, w, bias, y, counter, geometry, *args, False)
    assert bands(1, 2, 6, 6, 3, 6, 6, 1, 3) == 6                      # what it takes
    np.testing.assert_allclose(y[0, 0, 1:-1, 1:-1], 18)             # all ones: 2 channels x 9 inside
    for geometry in ([3, 3, 1, 1, 1, 1, 1], [3, 3, 0, 1, 1, 1, 1, 1], [3, 3, 1, 1, 1, 0, 1, 1], [3, 3, 1, 1, 1, 1, -1, 1],
                     [3, 3, 1 << 40, 1, 1, 1, 1, 1], [3, 3, 1, 1, 1 << 40, 1, 1, 1], [3, 2, 1, 1, 1, 1, 1, 1]):
        with pytest.raises(ValueError):
            bands(1, 2, 6, 6, 3, 6, 6, 1, 3, geometry=np.array(geometry, np.int64))
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 6, 0, 3)                            # a band of no rows
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, 0)                            # a block of no outputs
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 5, 1, 3)                               # y is not 3 x 6 x 5
    with pytest.raises(ValueError):
        bands(1, 2, 6, 5, 3, 6, 6, 1, 3)                               # x is not 2 x 6 x 5
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, 3, bias=np.ones(2, np.float32))
    with pytest.raises(TypeError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, 3, counter=np.zeros(1))          # a float64 counter
    with pytest.raises(TypeError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, 3, geometry=same.astype(np.float64))
    with pytest.raises(TypeError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, 3, w=w.astype(np.float64))
    _fastkernels.use_blas(0, False)
    try:
        with pytest.raises(RuntimeError, match="no BLAS"):
            bands(1, 2, 6, 6, 3, 6, 6, 1, 3)
    finally:
        _fastkernels.use_blas(*blas_threads.sgemm())
