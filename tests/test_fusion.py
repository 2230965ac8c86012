"""A relu folded into the conv or add before it (issue 30, fusion.py): runs without an observer
skip the relu's kernel, the op's kernels making the negatives 0 as they write each part, and
give to the bit what runs with an observer give (every op then runs alone, the observer seeing
the op's own value before its relu), on every path a conv takes (Winograd's bands, the direct
bands, NumPy's) and an add's (C parts, NumPy's, broadcast); a conv output another op also
reads, or the block gives, keeps its relu op; NaN and -0 stay, an fp16 conv (a negative
rounding to -0) gives what the relu op gives, and a small add's replay keeps its relu."""
import numpy as np
import pytest

import miltext
from miltext.interpreter import parallel
from support.fused_runs import program, runs

RNG = np.random.default_rng(7)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# a ResNet block: conv -> relu, conv (+ the block's input) -> add -> relu
BLOCK = """    %a: (1, 32, 40, 40, fp32) = conv(x=%x, weight=%w1, bias=%b1, {conv})
    %r: (1, 32, 40, 40, fp32) = relu(x=%a)
    %c: (1, 32, 40, 40, fp32) = conv(x=%r, weight=%w2, pad_type="valid")
    %s: (1, 32, 40, 40, fp32) = add(x=%c, y=%x)
    %y: (1, 32, 40, 40, fp32) = relu(x=%s)
"""
BLOCK_INPUTS = "%x: (1, 32, 40, 40, fp32), %w1: (32, {depth}, 3, 3, fp32), %b1: (32, fp32), %w2: (32, 32, 1, 1, fp32)"
PATHS = {"winograd": ('pad_type="same"', 32),                                  # 3x3 of stride 1
         "direct bands": ('pad_type="same", dilations=[2, 2]', 32),            # conv_bands
         "numpy": ('pad_type="same", groups=2', 16)}                           # grouped: NumPy's


@pytest.mark.parametrize("path", PATHS)
def test_a_relu_after_a_conv_is_the_convs_to_apply(kernel_calls, path, monkeypatch):
    monkeypatch.setattr(parallel, "COLUMNS", 1)         # bands of one row: the C parts on any thread count
    conv, depth = PATHS[path]
    inputs = {"x": f32(1, 32, 40, 40), "w1": f32(32, depth, 3, 3) / 10, "b1": f32(32), "w2": f32(32, 32, 1, 1) / 5}
    inputs["x"][0, 3, 5, 7] = np.nan
    plain, observed, seen = runs(program(BLOCK.format(conv=conv), BLOCK_INPUTS.format(depth=depth), "%y"), inputs)
    assert kernel_calls.count("relu") == 0 + 2, "the plain runs fold both relus (the conv's, the add's); the observed one runs both"
    np.testing.assert_array_equal(plain["y"], observed["y"])
    assert (seen["a"] < 0).any(), "the observer sees the conv's own value"
    np.testing.assert_array_equal(seen["r"], np.maximum(seen["a"], 0))
    assert np.isnan(plain["y"]).any()


def test_a_conv_output_read_again_or_given_keeps_its_relu(kernel_calls):
    body = """    %a: (1, 32, 40, 40, fp32) = conv(x=%x, weight=%w1, bias=%b1, pad_type="same")
    %r: (1, 32, 40, 40, fp32) = relu(x=%a)
    %d: (1, 32, 40, 40, fp32) = sub(x=%r, y=%a)
    %b: (1, 32, 40, 40, fp32) = conv(x=%x, weight=%w1, pad_type="same")
    %y: (1, 32, 40, 40, fp32) = relu(x=%b)
"""
    inputs = {"x": f32(1, 32, 40, 40), "w1": f32(32, 32, 3, 3), "b1": f32(32)}
    text = program(body, "%x: (1, 32, 40, 40, fp32), %w1: (32, 32, 3, 3, fp32), %b1: (32, fp32)", "%d, %b, %y")
    plain, observed, _ = runs(text, inputs)
    assert kernel_calls.count("relu") == 2 * 3, "both relus run in every run"
    assert (plain["b"] < 0).any() and (plain["d"] > 0).any()
    np.testing.assert_array_equal(plain["y"], np.maximum(plain["b"], 0))
    for name in ("d", "b", "y"):
        np.testing.assert_array_equal(plain[name], observed[name])


@pytest.mark.parametrize("strides", [[1, 1], [2, 2]])       # Winograd's path and the direct one
def test_an_fp16_conv_gives_what_its_relu_op_gives_to_the_bit(strides, kernel_calls):
    size = 48 // strides[0]
    body = f"""    %a: (1, 64, {size}, {size}, fp16) = conv(x=%x, weight=%w, pad_type="same", strides={strides})
    %y: (1, 64, {size}, {size}, fp16) = relu(x=%a)
"""
    x = (f32(1, 32, 48, 48) * 1e-4).astype(np.float16)       # tiny: negatives that round to -0
    w = (f32(64, 32, 3, 3) * 1e-3).astype(np.float16)
    plain, observed, seen = runs(program(body, "%x: (1, 32, 48, 48, fp16), %w: (64, 32, 3, 3, fp16)", "%y"),
                                 {"x": x, "w": w})
    assert kernel_calls.count("relu") == 1
    assert np.signbit(seen["a"][seen["a"] == 0]).any(), "the case holds a -0"
    assert plain["y"].tobytes() == observed["y"].tobytes()


ADD = """    %s: ({shape}, fp32) = add(x=%x, y=%y)
    %r: ({shape}, fp32) = relu(x=%s)
"""


@pytest.mark.parametrize("shape, y_shape", [
    ((1, 64, 56, 56), (1, 64, 56, 56)),       # C parts, shared on two threads
    ((4, 8), (4, 8)),                          # small: replayed after its first run
    ((1, 64, 56, 56), (1, 64, 1, 1)),          # broadcast: NumPy's add, then the relu
])
def test_a_relu_after_an_add_is_the_adds_to_apply(kernel_calls, shape, y_shape):
    x, y = f32(*shape), f32(*y_shape)
    x.flat[:3] = [np.nan, -0.0, 0.0]
    if y.size == x.size:
        y.flat[:3] = [1.0, -0.0, -0.0]          # NaN + 1, -0 + -0 = -0 (made 0 by the relu), 0 + -0 = 0
    text = program(ADD.format(shape=", ".join(map(str, shape))),
                   f"%x: ({', '.join(map(str, shape))}, fp32), %y: ({', '.join(map(str, y_shape))}, fp32)", "%r")
    session = miltext.Session(miltext.loads(text))
    want = np.maximum(x + y, 0)
    seen = {}
    # plain, observed (its add alone: a replay of the add alone), plain again: each the relu's bits
    for observer in (None, lambda fn, path, op, values: seen.update(values), None, None):
        got = session.run({"x": x, "y": y}, observer=observer)["r"]
        assert got.tobytes() == want.tobytes()
    assert kernel_calls.count("relu") == 1, "only the observed run runs the relu op"
    assert (seen["s"] < 0).any()
    if y.size == x.size:
        assert np.isnan(want.flat[0]) and (x + y).tobytes()[4:8] == b"\x00\x00\x00\x80" and want.flat[1] == 0


def test_an_add_on_two_threads_shares_its_parts_in_c(monkeypatch):
    """An fp32 add of 200,704 values (a ResNet-18 residual) on two threads: one C call the
    threads share, its relu folded in, to the bits of NumPy's."""
    from miltext.interpreter import blas_threads, fast_kernels
    setter = blas_threads._local_setter()
    if setter is None or fast_kernels.loaded() is None:
        pytest.skip("no C kernels, or a BLAS other than NumPy's bundled OpenBLAS (no threads lent)")
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    import os
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    shared = []
    claimed = parallel.claimed
    monkeypatch.setattr(parallel, "claimed", lambda native, run, pieces, macs: shared.append(pieces) or
                        claimed(native, run, pieces, macs))
    x, y = f32(1, 64, 56, 56), f32(1, 64, 56, 56)
    text = program(ADD.format(shape="1, 64, 56, 56"), "%x: (1, 64, 56, 56, fp32), %y: (1, 64, 56, 56, fp32)", "%r")
    before = setter(2)
    try:
        got = miltext.Session(miltext.loads(text)).run({"x": x, "y": y})["r"]
    finally:
        setter(before)
    assert shared == [2]
    assert got.tobytes() == np.maximum(x + y, 0).tobytes()
