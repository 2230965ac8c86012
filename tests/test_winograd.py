"""3x3 convolutions of stride 1 by Winograd's F(2x2, 3x3) (issue 30): the C transforms and the
batched product give the definition's results (held to float64) for every padding, odd sizes,
batches, many channels and bands of tile rows; the same op run by the NumPy path agrees; convs
the transforms do not take (strides, dilations, groups, other kernels, few tiles) keep to the
direct path; the C functions refuse what they cannot take."""
import os
import threading

import numpy as np
import pytest

from miltext.interpreter import blas_threads, fast_kernels, parallel
from miltext.interpreter.kernels import winograd
from support.convolution import conv, definition
from support.native import require_native
from support.parts import takes_each_part_once

_fastkernels = require_native("miltext.interpreter._fastkernels")
RNG = np.random.default_rng(23)


class Counting:
    """The C module with a count of its calls that transform windows: winograd_in (a band of
    NumPy's products), winograd_bands (bands taken from a counter) and winograd_outputs (the
    output channels taken from a counter)."""

    def __init__(self):
        self.calls = {"winograd_in": 0, "winograd_bands": 0, "winograd_outputs": 0}

    @property
    def tiles(self) -> int:
        return sum(self.calls.values())

    def __getattr__(self, name):
        def call(*args):
            if name in self.calls:
                self.calls[name] += 1
            return getattr(_fastkernels, name)(*args)
        return call


@pytest.fixture
def counted(monkeypatch):
    counting = Counting()
    monkeypatch.setattr(fast_kernels, "_fastkernels", counting)
    monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)
    return counting


@pytest.fixture(params=["bands in C", "NumPy's products"])
def path(request, monkeypatch):
    """Each way the tile rows are taken: bands of one tile row taken from a counter by the C
    kernels, which multiply with NumPy's OpenBLAS; or NumPy's batched products."""
    if request.param == "bands in C":
        if not fast_kernels.multiplies(_fastkernels):
            pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
        monkeypatch.setattr(parallel, "COLUMNS", 1)
    else:
        monkeypatch.setattr(fast_kernels, "_blas", False)
    return request.param


# (x's shape, output channels, the pad attributes, the padding they mean, a bias or not)
CASES = [
    ((1, 8, 16, 16), 8, {"pad_type": '"same"'}, ((1, 1), (1, 1)), True),
    ((2, 5, 13, 11), 7, {"pad_type": '"valid"'}, ((0, 0), (0, 0)), False),         # odd sizes, two images
    ((1, 3, 15, 20), 4, {"pad_type": '"custom"', "pad": "[2, 0, 1, 3]"}, ((2, 0), (1, 3)), True),
    ((1, 70, 12, 12), 67, {"pad_type": '"same_lower"'}, ((1, 1), (1, 1)), True),    # past the 64-kernel blocks
    ((1, 4, 9, 17), 3, {"pad_type": '"custom"', "pad": "[4, 4, 0, 5]"}, ((4, 4), (0, 5)), False),  # rows of padding only
]


@pytest.mark.parametrize("shape, out, attrs, pads, with_bias", CASES)
def test_winograd_holds_to_the_definition(counted, path, shape, out, attrs, pads, with_bias):
    x = RNG.standard_normal(shape).astype(np.float32)
    w = (RNG.standard_normal((out, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype(np.float32)
    b = RNG.standard_normal(out).astype(np.float32) if with_bias else None
    got = conv(x, w, b, **attrs)
    taken = "winograd_bands" if path == "bands in C" else "winograd_in"
    assert counted.calls[taken] >= 1 and counted.tiles == counted.calls[taken]     # the transforms ran
    want = definition(x, w, b, pads)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.MonkeyPatch.context() as patch:                     # and the NumPy path agrees
        patch.setenv("MILTEXT_PURE_PYTHON", "1")
        np.testing.assert_allclose(conv(x, w, b, **attrs), got,
                                   rtol=1e-5, atol=1e-5)


def test_bands_of_tile_rows_give_the_whole_result(counted, monkeypatch):
    monkeypatch.setattr(fast_kernels, "_blas", False)               # NumPy's batched products
    x = RNG.standard_normal((2, 6, 21, 10)).astype(np.float32)
    w = RNG.standard_normal((5, 6, 3, 3)).astype(np.float32)
    whole = conv(x, w, pad_type='"same"')
    monkeypatch.setattr(winograd, "_BUDGET", 1)                     # one tile row a band
    banded = conv(x, w, pad_type='"same"')
    assert counted.tiles == 2 + 2 * 11                              # an image's band, then its 11 rows
    np.testing.assert_array_equal(banded, whole)
    np.testing.assert_allclose(whole, definition(x, w, None, ((1, 1), (1, 1))), rtol=1e-5, atol=1e-5)


def test_an_fp16_input_is_computed_in_fp32_and_keeps_its_dtype(counted):
    x = RNG.standard_normal((1, 4, 12, 12)).astype(np.float16)
    w = (RNG.standard_normal((4, 4, 3, 3)) / 6).astype(np.float32)
    got = conv(x, w, dtype="fp16", pad_type='"same"')
    assert counted.tiles == 1 and got.dtype == np.float16
    np.testing.assert_allclose(got, definition(x, w, None, ((1, 1), (1, 1))), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("attrs, weight, pads, strides, dilations", [
    ({"pad_type": '"same"', "strides": "[2, 2]"}, (4, 4, 3, 3), ((0, 1), (0, 1)), (2, 2), (1, 1)),
    ({"pad_type": '"valid"', "dilations": "[2, 2]"}, (4, 4, 3, 3), ((0, 0), (0, 0)), (1, 1), (2, 2)),
    ({"pad_type": '"valid"'}, (4, 4, 5, 5), ((0, 0), (0, 0)), (1, 1), (1, 1)),
    ({"pad_type": '"same"'}, (4, 4, 3, 1), ((1, 1), (0, 0)), (1, 1), (1, 1)),
])
def test_other_convs_keep_to_the_direct_path(counted, attrs, weight, pads, strides, dilations):
    x = RNG.standard_normal((1, 4, 16, 16)).astype(np.float32)
    w = RNG.standard_normal(weight).astype(np.float32)
    got = conv(x, w, **attrs)
    assert counted.tiles == 0
    np.testing.assert_allclose(got, definition(x, w, None, pads, strides, dilations), rtol=1e-5, atol=1e-5)


def test_grouped_and_few_tile_convs_keep_to_the_direct_path(counted):
    x = RNG.standard_normal((1, 4, 16, 16)).astype(np.float32)
    w = RNG.standard_normal((4, 2, 3, 3)).astype(np.float32)
    conv(x, w, pad_type='"same"', groups=2)
    small = RNG.standard_normal((1, 4, 7, 7)).astype(np.float32)       # 16 tiles: the transform would not pay
    got = conv(small, w[:, :1].repeat(4, axis=1), pad_type='"same"')
    assert counted.tiles == 0
    np.testing.assert_allclose(got, definition(small, w[:, :1].repeat(4, axis=1), None, ((1, 1), (1, 1))),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("size, k", [(14, 96), (20, 64)])     # 49 tiles, 96 outputs; 100 tiles, 64 outputs
def test_a_layer_of_few_tiles_shares_its_output_channels_on_two_threads(counted, path, monkeypatch, size, k):
    """A layer of fewer tiles than twice its outputs (14x14 of 96, 20x20 of 64): on one thread,
    the direct path's rival is one band of tile rows; on two, the threads share the output
    channels, each transforming its own channels' weights (in C: blocks of 16 taken from a
    counter, after the windows), and so both take Winograd's path to the same result."""
    setter = blas_threads._local_setter()
    if setter is None:
        pytest.skip("a BLAS other than NumPy's bundled OpenBLAS lends no threads")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    splits = []
    split = parallel.split
    monkeypatch.setattr(parallel, "split", lambda count, work, share: splits.append((count, share)) or
                        split(count, work, share))
    x = RNG.standard_normal((1, 64, size, size)).astype(np.float32)
    w = (RNG.standard_normal((k, 64, 3, 3)) / 24).astype(np.float32)
    b = RNG.standard_normal(k).astype(np.float32)
    before = setter(2)
    try:
        shared = conv(x, w, b, pad_type='"same"')
    finally:
        setter(before)
    # the channels shared; the windows transformed once
    if path == "bands in C":
        assert splits == [] and counted.calls["winograd_outputs"] == 1 and counted.tiles == 1
    else:
        assert splits == [(k, 2)] and counted.calls["winograd_in"] == 1 and counted.tiles == 1
    before = setter(1)
    try:
        alone = conv(x, w, b, pad_type='"same"')
    finally:
        setter(before)
    assert counted.tiles == 2           # one thread: one band of tile rows
    np.testing.assert_allclose(shared, alone, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(shared, definition(x, w, b, ((1, 1), (1, 1))), rtol=1e-5, atol=1e-5)


def test_bands_are_taken_from_a_shared_counter_until_none_is_left():
    """winograd_bands runs the bands its counter has left: every one from 0, none once the
    counter is past them, the last two from 6; two threads sharing a counter run each band
    once between them, to the same bits as one thread."""
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    x = RNG.standard_normal((2, 5, 13, 11)).astype(np.float32)
    w = RNG.standard_normal((7, 5, 3, 3)).astype(np.float32)
    b = RNG.standard_normal(7).astype(np.float32)
    u = np.empty((16, 7, 5), np.float32)
    _fastkernels.winograd_weight(w, u)
    # 13 x 11 outputs under one row and column of zeros each side: 7 tile rows, 4 bands of at most 2
    # an image, even (tile rows 0, 1-2, 3-4, 5-6)

    def bands(counter, y):
        return _fastkernels.winograd_bands(x, u, b, y, counter, 2, 5, 13, 11, 7, 13, 11, 1, 1, 2, False)
    counter, y = np.zeros(1, np.int64), np.full((2, 7, 13, 11), np.nan, np.float32)
    assert bands(counter, y) == 8
    np.testing.assert_allclose(y, definition(x, w, b, ((1, 1), (1, 1))), rtol=1e-5, atol=1e-5)
    takes_each_part_once(bands, counter, y, 8, 6, np.s_[1, :, 6:])      # from 6: image 1's last 2 bands
    # a relu folded in: each band's negatives made 0 (an odd output height: the last tile row's
    # one row), NaN kept
    x[0, 0, 0, 0] = np.nan
    relu = np.full_like(y, np.nan)
    assert _fastkernels.winograd_bands(x, u, b, relu, np.zeros(1, np.int64), 2, 5, 13, 11, 7, 13, 11, 1, 1, 2,
                                       True) == 8
    want = definition(x, w, b, ((1, 1), (1, 1)))
    np.testing.assert_allclose(relu, np.maximum(want, 0), rtol=1e-5, atol=1e-5)
    assert np.isnan(relu[0, :, :2, :2]).all() and (relu[1] >= 0).all()


def test_bands_in_c_refuse_what_they_cannot_take():
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    x, u = np.ones((1, 2, 6, 6), np.float32), np.ones((16, 3, 2), np.float32)
    y, counter = np.empty((1, 3, 6, 6), np.float32), np.zeros(1, np.int64)

    def bands(*args, x=x, u=u, y=y, counter=counter, bias=None):
        return _fastkernels.winograd_bands(x, u, bias, y, counter, *args, False)
    assert bands(1, 2, 6, 6, 3, 6, 6, 1, 1, 1) == 3                   # what it takes
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, 1, 0, counter=np.zeros(1, np.int64))        # a band of no rows
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 4, 6, 6, 1, 1, 1, counter=np.zeros(1, np.int64))        # u is not 16 x 4 x 2
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 5, 1, 1, 1, counter=np.zeros(1, np.int64))        # y is not 3 x 6 x 5
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 6, -1, 1, 1, counter=np.zeros(1, np.int64))
    with pytest.raises(ValueError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, 1, 1, counter=np.zeros(1, np.int64), bias=np.ones(2, np.float32))
    with pytest.raises(TypeError):
        bands(1, 2, 6, 6, 3, 6, 6, 1, 1, 1, counter=np.zeros(1))                  # a float64 counter
    with pytest.raises((TypeError, ValueError)):
        frozen = np.zeros(1, np.int64)
        frozen.flags.writeable = False
        bands(1, 2, 6, 6, 3, 6, 6, 1, 1, 1, counter=frozen)
    _fastkernels.use_blas(0, False)
    try:
        with pytest.raises(RuntimeError, match="no BLAS"):
            bands(1, 2, 6, 6, 3, 6, 6, 1, 1, 1, counter=np.zeros(1, np.int64))
    finally:
        _fastkernels.use_blas(*blas_threads.sgemm())


def test_the_weights_are_transformed_in_parts_to_the_same_bits():
    """The kernels from `first`, `count` of them, land where the whole transform puts them and
    nothing else is written: as each thread transforms its output channels'; first and count
    outside the kernels are refused."""
    w = RNG.standard_normal((5, 20, 3, 3)).astype(np.float32)     # 100 kernels (blocks of 64 in C)
    whole = np.empty((16, 5, 20), np.float32)
    _fastkernels.winograd_weight(w, whole)
    parts = np.full_like(whole, np.nan)
    for first, count in ((0, 40), (40, 60)):                      # output channels 0-1, then 2-4
        _fastkernels.winograd_weight(w, parts, first, count)
        np.testing.assert_array_equal(parts[:, :(first + count) // 20], whole[:, :(first + count) // 20])
        assert np.isnan(parts[:, (first + count) // 20:]).all()
    _fastkernels.winograd_weight(w, part := np.full_like(whole, np.nan), 64, -1)     # from 64 to the last
    np.testing.assert_array_equal(part.reshape(16, -1)[:, 64:], whole.reshape(16, -1)[:, 64:])
    assert np.isnan(part.reshape(16, -1)[:, :64]).all()
    for first, count in ((-1, 2), (101, 0), (90, 11), (0, -2)):
        with pytest.raises(ValueError):
            _fastkernels.winograd_weight(w, parts, first, count)


def test_the_c_transforms_refuse_what_they_cannot_take():
    w = np.ones((2, 3, 3, 3), np.float32)
    with pytest.raises(ValueError):
        _fastkernels.winograd_weight(w, np.empty((16, 2, 2), np.float32))            # u for 4 kernels, not 6
    with pytest.raises(ValueError):
        _fastkernels.winograd_weight(np.ones((2, 3, 2, 2), np.float32), np.empty((16, 6), np.float32))
    with pytest.raises(TypeError):
        _fastkernels.winograd_weight(w.astype(np.float64), np.empty((16, 6), np.float32))
    x = np.ones((3, 6, 6), np.float32)
    v = np.empty((16, 3, 9), np.float32)
    with pytest.raises(ValueError):
        _fastkernels.winograd_in(x, v, 3, 6, 5, 1, 1, 0, 3, 3)                       # x is not 3 x 6 x 5
    with pytest.raises(ValueError):
        _fastkernels.winograd_in(x, v, 3, 6, 6, 1, 1, 0, 3, 4)                       # v is not 16 x 3 x 3 x 4
    with pytest.raises(ValueError):
        _fastkernels.winograd_in(x, v, 3, 6, 6, -1, 1, 0, 3, 3)
    with pytest.raises(ValueError):
        _fastkernels.winograd_in(x, v, 3, 6, 6, 1, 1, 1 << 62, 3, 3)                 # rows past any tensor
    with pytest.raises((BufferError, ValueError)):
        _fastkernels.winograd_in(x, v[:, :, ::-1], 3, 6, 6, 1, 1, 0, 3, 3)           # v reversed
    m, y = np.ones((16, 2, 9), np.float32), np.empty((2, 6, 6), np.float32)
    with pytest.raises(ValueError):
        _fastkernels.winograd_out(m, np.ones(3, np.float32), y, 2, 6, 6, 0, 3, 3)    # bias of 3 for 2 channels
    with pytest.raises(ValueError):
        _fastkernels.winograd_out(m, None, y, 2, 6, 5, 0, 3, 3)
    with pytest.raises(TypeError):
        _fastkernels.winograd_out(m, np.ones(2), y, 2, 6, 6, 0, 3, 3)
    # and what they take: all-ones windows of a same-padded 6x6 count their neighbours
    _fastkernels.winograd_weight(w, u := np.empty((16, 2, 3), np.float32))
    _fastkernels.winograd_in(x, v, 3, 6, 6, 1, 1, 0, 3, 3)
    _fastkernels.winograd_out(np.matmul(u, v), np.full(2, 0.5, np.float32), y, 2, 6, 6, 0, 3, 3)
    rows = np.array([2, 3, 3, 3, 3, 2])                      # the window's rows (and columns) inside x
    for channel in y:
        np.testing.assert_array_equal(channel, 3 * np.outer(rows, rows) + 0.5)


def test_bands_transform_their_weights_first_when_given_them():
    """winograd_bands given the kernels transforms them into u first, in parts taken from
    counter[2] and counted in counter[3], to the bits winograd_weight gives; every band waits
    for the whole transform. Two threads sharing a counter take the transform's parts and the
    bands between them. A counter without room for the first phase is refused."""
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    x = RNG.standard_normal((2, 40, 13, 11)).astype(np.float32)
    w = RNG.standard_normal((30, 40, 3, 3)).astype(np.float32)       # 1,200 kernels: 3 parts of 512
    b = RNG.standard_normal(30).astype(np.float32)
    given = np.empty((16, 30, 40), np.float32)
    _fastkernels.winograd_weight(w, given)
    want = np.full((2, 30, 13, 11), np.nan, np.float32)
    assert _fastkernels.winograd_bands(x, given, b, want, np.zeros(1, np.int64), 2, 40, 13, 11, 30, 13, 11, 1, 1, 2,
                                       False) == 8
    np.testing.assert_allclose(want, definition(x, w, b, ((1, 1), (1, 1))), rtol=1e-4, atol=1e-4)

    def bands(counter, y, u):
        return _fastkernels.winograd_bands(x, u, b, y, counter, 2, 40, 13, 11, 30, 13, 11, 1, 1, 2, False, w)
    u, y, counter = np.full_like(given, np.nan), np.full_like(want, np.nan), np.zeros(4, np.int64)
    assert bands(counter, y, u) == 8
    assert counter[2:].tolist() == [4, 3]           # the 3 parts taken (and one look past them), 3 done
    np.testing.assert_array_equal(u, given)
    np.testing.assert_array_equal(y, want)
    u, y, counter, ran = np.full_like(given, np.nan), np.full_like(want, np.nan), np.zeros(4, np.int64), []
    threads = [threading.Thread(target=lambda: ran.append(bands(counter, y, u))) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(ran) == 8 and counter[3] == 3
    np.testing.assert_array_equal(u, given)
    np.testing.assert_array_equal(y, want)
    with pytest.raises(ValueError, match="counter of 4"):
        bands(np.zeros(1, np.int64), y, u)
    with pytest.raises(ValueError):
        bands(np.zeros(4, np.int64), y, np.empty((16, 30, 39), np.float32))     # u is not 16 x 30 x 40
    frozen = np.empty_like(given)
    frozen.flags.writeable = False
    with pytest.raises((TypeError, ValueError)):
        bands(np.zeros(4, np.int64), y, frozen)                                  # u is written


@pytest.mark.parametrize("shape, k, around, bias, relu", [
    ((1, 64, 14, 14), 96, ((1, 1), (1, 1)), True, False),        # a 14x14 layer: 49 tiles
    ((2, 33, 9, 7), 40, ((0, 0), (0, 0)), False, True),          # two images, odd sizes, 33 channels (2 parts)
    ((1, 3, 6, 10), 5, ((2, 0), (1, 3)), True, True),            # uneven padding, a block wider than k
])
def test_output_channel_blocks_in_c_give_the_definition(shape, k, around, bias, relu):
    """winograd_outputs: every image's windows transformed first (parts of 32 channels an image,
    from counter[2]), then blocks of output channels, each transforming its own kernels: the
    definition's correlation, plus the bias, negatives made 0 when relu (NaN kept); each block
    taken once from a shared counter."""
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    n, c, h, w_ = shape
    x = RNG.standard_normal(shape).astype(np.float32)
    x[0, 0, 0, 0] = np.nan
    w = (RNG.standard_normal((k, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)
    b = RNG.standard_normal(k).astype(np.float32) if bias else None
    (top, bottom), (left, right) = around
    ho, wo = h + top + bottom - 2, w_ + left + right - 2
    tiles = -(-ho // 2) * -(-wo // 2)
    block = 16
    blocks = -(-k // block)
    v = np.empty((n, 16, c, tiles), np.float32)

    def outputs(counter, y):
        return _fastkernels.winograd_outputs(x, w, b, y, v, counter, n, c, h, w_, k, ho, wo, top, left, block, relu)
    y, counter = np.full((n, k, ho, wo), np.nan, np.float32), np.zeros(4, np.int64)
    assert outputs(counter, y) == blocks
    assert counter[3] == n * -(-c // 32)
    want = definition(x, w, b, around)
    want = np.maximum(want, 0) if relu else want
    # NaN where the definition has it, and spread only within the tiles by x's first values
    assert np.isnan(y[np.isnan(want)]).all() and not np.isnan(y[1:]).any() and not np.isnan(y[:, :, 4:]).any()
    assert not np.isnan(y[:, :, :, 4:]).any()
    kept = ~np.isnan(y)
    np.testing.assert_allclose(y[kept], want[kept], rtol=1e-4, atol=1e-4)
    takes_each_part_once(outputs, counter, y, blocks, blocks - 1, np.s_[:, (blocks - 1) * block:], width=4)


def test_output_channel_blocks_in_c_refuse_what_they_cannot_take():
    if not fast_kernels.multiplies(_fastkernels):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    x, w = np.ones((1, 2, 6, 6), np.float32), np.ones((3, 2, 3, 3), np.float32)
    y, v = np.empty((1, 3, 6, 6), np.float32), np.empty((1, 16, 2, 9), np.float32)

    def outputs(*args, w=w, y=y, v=v, counter=None, block=4):
        counter = np.zeros(4, np.int64) if counter is None else counter
        return _fastkernels.winograd_outputs(x, w, None, y, v, counter, *args, block, False)
    assert outputs(1, 2, 6, 6, 3, 6, 6, 1, 1) == 1                    # what it takes
    with pytest.raises(ValueError):
        outputs(1, 2, 6, 6, 3, 6, 6, 1, 1, block=0)                  # blocks of no outputs
    with pytest.raises(ValueError):
        outputs(1, 2, 6, 6, 3, 6, 6, 1, 1, counter=np.zeros(1, np.int64))     # no room for the first phase
    with pytest.raises(ValueError):
        outputs(1, 2, 6, 6, 3, 6, 6, 1, 1, v=np.empty((1, 16, 2, 8), np.float32))    # v is not 16 x 2 x 9 tiles
    with pytest.raises(ValueError):
        outputs(1, 2, 6, 6, 4, 6, 6, 1, 1)                            # w is not 4 x 2 x 3 x 3
    with pytest.raises(ValueError):
        outputs(1, 2, 6, 6, 3, 6, 6, -1, 1)
    with pytest.raises(TypeError):
        outputs(1, 2, 6, 6, 3, 6, 6, 1, 1, v=np.empty((1, 16, 2, 9)))     # a float64 v
