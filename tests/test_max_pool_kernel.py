"""max_pool's C kernel (issue 30): every kernel size, stride, padding and ceil mode gives what
the NumPy path gives, bit for bit (a max is exact), NaN and -inf included, and windows wholly in
the padding; one or two threads; what it does not take (fp16, 1-D and 3-D pools) keeps to NumPy;
the C function refuses what it cannot take."""
import numpy as np
import pytest

import miltext
from miltext.interpreter import fast_kernels, run
from support.native import require_native

_fastkernels = require_native("miltext.interpreter._fastkernels")
RNG = np.random.default_rng(41)


def max_pool(x, dtype="fp32", **attrs):
    shape = "".join(f"{d}, " for d in x.shape)
    given = ", ".join(f"{k}={v}" for k, v in attrs.items())
    text = f"main[CoreML7](%x: ({shape}{dtype})) {{\n  block0() {{\n    %y = max_pool(x=%x, {given})\n  }} -> (%y)\n}}\n"
    return run(miltext.loads(text), {"x": x})["y"]


def both(x, monkeypatch, **attrs):
    """The NumPy path's result, then the C kernel's (its calls counted)."""
    monkeypatch.setenv("MILTEXT_PURE_PYTHON", "1")
    want = max_pool(x, **attrs)
    monkeypatch.delenv("MILTEXT_PURE_PYTHON")
    calls = []
    monkeypatch.setattr(fast_kernels, "_fastkernels", Counting(calls))
    return want, max_pool(x, **attrs), calls


class Counting:
    def __init__(self, calls):
        self.calls = calls

    def __getattr__(self, name):
        def call(*args):
            if name not in ("spin", "spinners", "join"):    # (the workers' waits for their next part)
                self.calls.append(name)
            return getattr(_fastkernels, name)(*args)
        return call


@pytest.mark.parametrize("shape, attrs", [
    ((1, 64, 112, 112), dict(kernel_sizes="[3, 3]", strides="[2, 2]", pad_type='"custom"', pad="[1, 1, 1, 1]")),
    ((2, 3, 17, 13), dict(kernel_sizes="[2, 3]", strides="[1, 2]", pad_type='"valid"')),
    ((1, 4, 9, 10), dict(kernel_sizes="[3, 3]", strides="[2, 2]", pad_type='"same"')),
    ((1, 4, 9, 10), dict(kernel_sizes="[3, 2]", strides="[3, 3]", pad_type='"same_lower"')),
    ((1, 2, 8, 8), dict(kernel_sizes="[2, 2]", strides="[2, 2]", pad_type='"custom"', pad="[3, 0, 0, 3]")),
    ((1, 5, 11, 11), dict(kernel_sizes="[3, 3]", strides="[2, 2]", pad_type='"valid"', ceil_mode="true")),
    ((3, 1, 6, 7), dict(kernel_sizes="[6, 7]", strides="[1, 1]", pad_type='"valid"')),
    ((1, 2, 5, 5), dict(kernel_sizes="[1, 1]", strides="[1, 1]", pad_type='"valid"')),
    ((1, 1, 4, 4), dict(kernel_sizes="[1, 2]", strides="[4194304, 3]", pad_type='"valid"')),   # one row of windows
])
def test_the_c_kernel_gives_the_numpy_paths_result(monkeypatch, shape, attrs):
    x = RNG.standard_normal(shape).astype(np.float32)
    want, got, calls = both(x, monkeypatch, **attrs)
    assert set(calls) == {"max_pool"}            # (once a thread)
    assert got.dtype == np.float32 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_nan_and_infinities_and_windows_wholly_in_the_padding(monkeypatch):
    x = RNG.standard_normal((1, 2, 6, 6)).astype(np.float32)
    x[0, 0, 2, 3] = np.nan
    x[0, 1, 0, :] = -np.inf
    x[0, 1, 5, 5] = np.inf
    want, got, calls = both(x, monkeypatch, kernel_sizes="[2, 2]", strides="[2, 2]", pad_type='"custom"',
                            pad="[4, 0, 0, 4]")                   # the first two rows of windows: padding only
    assert calls == ["max_pool"]
    np.testing.assert_array_equal(got, want)
    assert np.isneginf(got[0, :, :2]).all() and np.isnan(got[0, 0, 3, 1]) and np.isposinf(got[0, 1, 4, 2])


def test_two_threads_share_the_planes_and_give_the_same_bits(monkeypatch):
    """Two threads: one C call, its parts of planes taken from a counter (parallel.claimed)."""
    from miltext.interpreter import parallel
    monkeypatch.setattr(parallel, "threads", lambda work, enough: 2)
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    shared, claimed = [], parallel.claimed
    monkeypatch.setattr(parallel, "claimed",
                        lambda native, run, pieces, macs: shared.append(pieces) or claimed(native, run, pieces, macs))
    x = RNG.standard_normal((1, 32, 40, 40)).astype(np.float32)
    attrs = dict(kernel_sizes="[3, 3]", strides="[2, 2]", pad_type='"custom"', pad="[1, 1, 1, 1]")
    want, got, calls = both(x, monkeypatch, **attrs)
    assert calls == ["max_pool"] and shared == [2]
    np.testing.assert_array_equal(got, want)


def test_a_counter_hands_out_every_part_of_planes_once():
    """With a counter, parts of 4 planes taken from counter[0]: a spent counter runs none, one
    at part 2 only the last 2 planes, two threads sharing one each part once; the bits of the
    call without a counter."""
    from support.parts import takes_each_part_once
    x = RNG.standard_normal((10, 9, 8)).astype(np.float32)
    want = np.empty((10, 4, 4), np.float32)
    assert _fastkernels.max_pool(x, want, 10, 9, 8, 3, 3, 2, 2, 1, 1, 4, 4) is None
    whole, spent = np.full_like(want, np.nan), np.zeros(1, np.int64)
    assert _fastkernels.max_pool(x, whole, 10, 9, 8, 3, 3, 2, 2, 1, 1, 4, 4, spent) == 3      # 4 + 4 + 2 planes
    np.testing.assert_array_equal(whole, want)
    takes_each_part_once(lambda c, y: _fastkernels.max_pool(x, y, 10, 9, 8, 3, 3, 2, 2, 1, 1, 4, 4, c), spent,
                         whole, 3, 2, np.s_[8:])
    with pytest.raises((TypeError, ValueError)):
        _fastkernels.max_pool(x, whole, 10, 9, 8, 3, 3, 2, 2, 1, 1, 4, 4, np.zeros(1, np.float32))


def test_fp16_and_other_ranks_keep_to_numpy(monkeypatch):
    calls = []
    monkeypatch.setattr(fast_kernels, "_fastkernels", Counting(calls))
    monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)
    half = max_pool(RNG.standard_normal((1, 2, 6, 6)).astype(np.float16), "fp16", kernel_sizes="[2, 2]",
                    strides="[2, 2]", pad_type='"valid"')
    assert half.dtype == np.float16 and half.shape == (1, 2, 3, 3)
    line = RNG.standard_normal((1, 2, 9)).astype(np.float32)
    got = max_pool(line, kernel_sizes="[3]", strides="[3]", pad_type='"valid"')
    np.testing.assert_array_equal(got, line.reshape(1, 2, 3, 3).max(axis=-1))
    assert calls == []


def test_the_c_function_refuses_what_it_cannot_take():
    x, y = np.ones((2, 4, 4), np.float32), np.empty((2, 2, 2), np.float32)
    with pytest.raises(ValueError):
        _fastkernels.max_pool(x, y, 2, 4, 5, 2, 2, 2, 2, 0, 0, 2, 2)          # x is not 2 planes of 4 x 5
    with pytest.raises(ValueError):
        _fastkernels.max_pool(x, y, 2, 4, 4, 2, 2, 2, 2, 0, 0, 2, 3)          # nor y of 2 x 3
    with pytest.raises(ValueError):
        _fastkernels.max_pool(x, y, 2, 4, 4, 0, 2, 2, 2, 0, 0, 2, 2)
    with pytest.raises(ValueError):
        _fastkernels.max_pool(x, y, 2, 4, 4, 2, 2, 1 << 40, 2, 0, 0, 2, 2)    # 2 rows 2^40 apart: past any tensor
    with pytest.raises(ValueError):
        _fastkernels.max_pool(x, y, 2, 4, 4, 2, 2, 2, 2, -1, 0, 2, 2)
    with pytest.raises(TypeError):
        _fastkernels.max_pool(x.astype(np.float64), y, 2, 4, 4, 2, 2, 2, 2, 0, 0, 2, 2)
    _fastkernels.max_pool(np.arange(32, dtype=np.float32).reshape(2, 4, 4), y, 2, 4, 4, 2, 2, 2, 2, 0, 0, 2, 2)
    np.testing.assert_array_equal(y, [[[5, 7], [13, 15]], [[21, 23], [29, 31]]])


def test_random_geometries_hold_to_the_definition():
    """300 small pools of random kernels, strides and padding (windows wholly in the padding on
    either side among them), NaN in some, straight through the C function: each output is the
    max of its window of the input padded with -inf, NaN winning."""
    rng = np.random.default_rng(7)
    for _ in range(300):
        kh, kw = (int(v) for v in rng.integers(1, 5, 2))
        sh, sw = (int(v) for v in rng.integers(1, 4, 2))
        top, bottom, left, right = (int(v) for v in rng.integers(0, 6, 4))
        h, w = int(rng.integers(1, 12)), int(rng.integers(1, 40))
        ho, wo = (h + top + bottom - kh) // sh + 1, (w + left + right - kw) // sw + 1
        if ho <= 0 or wo <= 0:
            continue
        x = rng.standard_normal((2, h, w)).astype(np.float32)
        if rng.random() < 0.3:
            x.flat[rng.integers(0, x.size)] = np.nan
        inside = np.pad(x, ((0, 0), (top, bottom), (left, right)), constant_values=-np.inf)
        want = np.lib.stride_tricks.sliding_window_view(inside, (kh, kw), axis=(1, 2))[:, ::sh, ::sw][:, :ho, :wo]
        want = want.max(axis=(-2, -1))
        got = np.full((2, ho, wo), 7.0, np.float32)
        _fastkernels.max_pool(x, got, 2, h, w, kh, kw, sh, sw, top, left, ho, wo)
        np.testing.assert_array_equal(got, want, err_msg=f"{(h, w, kh, kw, sh, sw, top, bottom, left, right)}")
