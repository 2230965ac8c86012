"""3x3 convolutions of stride 1 by Winograd's F(2x2, 3x3) (issue 30): the C transforms and the
batched product give the definition's results (held to float64) for every padding, odd sizes,
batches, many channels and bands of tile rows; the same op run by the NumPy path agrees; convs
the transforms do not take (strides, dilations, groups, other kernels, few tiles) keep to the
direct path; the C functions refuse what they cannot take."""
import numpy as np
import pytest

import miltext
from miltext.interpreter import fast_kernels, run
from miltext.interpreter.kernels import winograd
from support.native import require_native

_fastkernels = require_native("miltext.interpreter._fastkernels")
RNG = np.random.default_rng(23)


class Counting:
    """The C module with a count of its winograd_in calls."""

    def __init__(self):
        self.tiles = 0

    def __getattr__(self, name):
        def call(*args):
            if name == "winograd_in":
                self.tiles += 1
            return getattr(_fastkernels, name)(*args)
        return call


@pytest.fixture
def counted(monkeypatch):
    counting = Counting()
    monkeypatch.setattr(fast_kernels, "_fastkernels", counting)
    monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)
    return counting


def conv(x, w, bias=None, dtype="fp32", **attrs):
    """conv(x=%x, weight=%w, ...) run in a program of its own."""
    inputs = {"x": x, "w": w} | ({} if bias is None else {"b": bias})
    params = ", ".join(f"%{k}: ({''.join(f'{d}, ' for d in v.shape)}{dtype if k == 'x' else 'fp32'})"
                       for k, v in inputs.items())
    given = "".join(f", {k}={v}" for k, v in attrs.items()) + ("" if bias is None else ", bias=%b")
    text = f"main[CoreML7]({params}) {{\n  block0() {{\n    %y = conv(x=%x, weight=%w{given})\n  }} -> (%y)\n}}\n"
    return run(miltext.loads(text), inputs)["y"]


def definition(x, w, bias, pads, strides=(1, 1), dilations=(1, 1)):
    """The correlation in float64, window by window."""
    (t, b), (l, r) = pads
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (t, b), (l, r)])
    k = [(s - 1) * d + 1 for s, d in zip(w.shape[2:], dilations)]
    cols = np.lib.stride_tricks.sliding_window_view(x, k, axis=(2, 3))[:, :, ::strides[0], ::strides[1],
                                                                       ::dilations[0], ::dilations[1]]
    y = np.einsum("nchwij,ocij->nohw", cols, w.astype(np.float64))
    return y if bias is None else y + bias[:, None, None]


# (x's shape, output channels, the pad attributes, the padding they mean, a bias or not)
CASES = [
    ((1, 8, 16, 16), 8, {"pad_type": '"same"'}, ((1, 1), (1, 1)), True),
    ((2, 5, 13, 11), 7, {"pad_type": '"valid"'}, ((0, 0), (0, 0)), False),         # odd sizes, two images
    ((1, 3, 15, 20), 4, {"pad_type": '"custom"', "pad": "[2, 0, 1, 3]"}, ((2, 0), (1, 3)), True),
    ((1, 70, 12, 12), 67, {"pad_type": '"same_lower"'}, ((1, 1), (1, 1)), True),    # past the 64-kernel blocks
    ((1, 4, 9, 17), 3, {"pad_type": '"custom"', "pad": "[4, 4, 0, 5]"}, ((4, 4), (0, 5)), False),  # rows of padding only
]


@pytest.mark.parametrize("shape, out, attrs, pads, with_bias", CASES)
def test_winograd_holds_to_the_definition(counted, shape, out, attrs, pads, with_bias):
    x = RNG.standard_normal(shape).astype(np.float32)
    w = (RNG.standard_normal((out, shape[1], 3, 3)) / np.sqrt(9 * shape[1])).astype(np.float32)
    b = RNG.standard_normal(out).astype(np.float32) if with_bias else None
    got = conv(x, w, b, **attrs)
    assert counted.tiles >= 1                                       # the transforms ran
    want = definition(x, w, b, pads)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    with pytest.MonkeyPatch.context() as patch:                     # and the NumPy path agrees
        patch.setenv("MILTEXT_PURE_PYTHON", "1")
        np.testing.assert_allclose(conv(x, w, b, **attrs), got,
                                   rtol=1e-5, atol=1e-5)


def test_bands_of_tile_rows_give_the_whole_result(counted, monkeypatch):
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
