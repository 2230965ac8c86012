"""An add folded into the conv before it (issue 30, fusion.py): a residual block's conv adds the
add's other input (and then applies the add's relu) to each part as it writes it, and the add's
and relu's steps only name the result. Runs without an observer skip both kernels and give to
the bit what runs with an observer give (every op then runs alone), on every path a conv takes
(Winograd's bands and output blocks, the direct bands, NumPy's), in fp16, and where the other
input broadcasts; an add whose other input the block has not made before the conv, or whose
conv output another op also reads, runs as its own op."""
import os

import numpy as np
import pytest

from miltext.interpreter import fast_kernels, parallel
from support.fused_runs import program, runs
from support.native import require_native

RNG = np.random.default_rng(11)


def f32(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


# a ResNet block whose residual the block made: conv -> relu (the residual), conv -> add -> relu
BLOCK = """    %a: ({shape}, {dt}) = conv(x=%x, weight=%w1, pad_type="same")
    %r: ({shape}, {dt}) = relu(x=%a)
    %c: ({shape}, {dt}) = conv(x=%r, weight=%w2, bias=%b2, {conv})
    %s: ({shape}, {dt}) = add({operands})
    %y: ({shape}, {dt}) = relu(x=%s)
"""
INPUTS = "%x: ({shape}, {dt}), %w1: ({k}, {k}, 3, 3, {dt}), %w2: ({k}, {depth}, 3, 3, {dt}), %b2: ({k}, {dt})"
PATHS = {   # the second conv's settings, the depth of its weight, its size and channels, threads
    "winograd bands": ('pad_type="same"', 32, 40, 32, 1),
    "winograd output blocks": ('pad_type="same"', 64, 14, 64, 2),     # few tiles, two threads
    "direct bands": ('pad_type="same", dilations=[2, 2]', 32, 40, 32, 2),
    "numpy": ('pad_type="same", groups=2', 16, 40, 32, 1),
}


def block_inputs(k: int, size: int, depth: int, dtype=np.float32) -> dict:
    inputs = {"x": f32(1, k, size, size), "w1": f32(k, k, 3, 3) / 10, "w2": f32(k, depth, 3, 3) / 10, "b2": f32(k)}
    inputs["x"][0, 3, 5, 7] = np.nan
    return {name: value.astype(dtype) for name, value in inputs.items()}


@pytest.mark.parametrize("operands", ["x=%c, y=%r", "x=%r, y=%c"])
@pytest.mark.parametrize("path", PATHS)
def test_an_add_after_a_conv_is_the_convs_to_apply(kernel_calls, monkeypatch, path, operands):
    require_native("miltext.interpreter._fastkernels")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))
    conv, depth, size, k, threads = PATHS[path]
    shape = f"1, {k}, {size}, {size}"
    text = program(BLOCK.format(shape=shape, dt="fp32", conv=conv, operands=operands),
                   INPUTS.format(shape=shape, dt="fp32", k=k, depth=depth), "%y")
    plain, observed, seen = runs(text, block_inputs(k, size, depth), threads)
    assert kernel_calls.count("add") == 1 and kernel_calls.count("relu") == 2, \
        "the plain runs fold the add and both relus (into the convs); the observed run runs each op"
    assert plain["y"].tobytes() == observed["y"].tobytes()
    np.testing.assert_array_equal(seen["s"], seen["c"] + seen["r"])
    assert (seen["s"] < 0).any() and np.isnan(plain["y"]).any()


def test_an_fp16_residual_block_gives_what_its_ops_give_to_the_bit(kernel_calls):
    """The conv computes in fp32 and casts; the add then adds in fp16, as the add op does."""
    text = program(BLOCK.format(shape="1, 32, 24, 24", dt="fp16", conv='pad_type="same"', operands="x=%c, y=%r"),
                   INPUTS.format(shape="1, 32, 24, 24", dt="fp16", k=32, depth=32), "%y")
    plain, observed, _ = runs(text, block_inputs(32, 24, 32, np.float16))
    assert kernel_calls.count("add") == 1
    assert plain["y"].tobytes() == observed["y"].tobytes()


def test_a_broadcast_residual_is_added_as_the_add_adds_it(kernel_calls):
    """The add's other input one value a channel (a var the block made): the conv's output has
    the add's type, so the add is folded; the conv (the direct bands in C, which take a residual
    of the output's shape only) adds it after writing its output."""
    body = """    %m: (1, 32, 1, 1, fp32) = reduce_mean(x=%x, axes=[2, 3], keep_dims=true)
    %c: (1, 32, 20, 20, fp32) = conv(x=%x, weight=%w, pad_type="same", dilations=[2, 2])
    %s: (1, 32, 20, 20, fp32) = add(x=%c, y=%m)
    %y: (1, 32, 20, 20, fp32) = relu(x=%s)
"""
    text = program(body, "%x: (1, 32, 20, 20, fp32), %w: (32, 32, 3, 3, fp32)", "%y")
    plain, observed, seen = runs(text, {"x": f32(1, 32, 20, 20), "w": f32(32, 32, 3, 3) / 10})
    assert kernel_calls.count("add") == 1
    assert plain["y"].tobytes() == observed["y"].tobytes()
    np.testing.assert_array_equal(plain["y"], np.maximum(seen["c"] + seen["m"], 0))


@pytest.mark.parametrize("case", ["the function's input", "the conv's output read again", "a const"])
def test_an_add_the_conv_cannot_take_runs_as_its_own_op(kernel_calls, case):
    """Not folded: an other input the block has not made by the conv (a function input, a
    const), or a conv output another op also reads; each run gives what the ops give. (48x48:
    an add too big to be replayed, so each run runs its kernel.)"""
    other, after = {"the function's input": ("%x", ""),
                    "the conv's output read again": ("%r", "    %d: (1, 32, 48, 48, fp32) = sub(x=%y, y=%c)\n"),
                    "a const": ("%k", "")}[case]
    body = f"""    %k: (fp32) = const(val=fp32(0.5))
    %r: (1, 32, 48, 48, fp32) = relu(x=%x)
    %c: (1, 32, 48, 48, fp32) = conv(x=%r, weight=%w, pad_type="same")
    %y: (1, 32, 48, 48, fp32) = add(x=%c, y={other})
{after}"""
    text = program(body, "%x: (1, 32, 48, 48, fp32), %w: (32, 32, 3, 3, fp32)", "%y, %d" if after else "%y")
    plain, observed, seen = runs(text, {"x": f32(1, 32, 48, 48), "w": f32(32, 32, 3, 3) / 10})
    assert kernel_calls.count("add") == 3, "every run runs the add"
    for name in plain:
        assert plain[name].tobytes() == observed[name].tobytes()


def test_the_c_kernels_add_a_residual_of_the_outputs_size_only():
    """conv_bands, winograd_bands and winograd_outputs add a float32 residual of y's size to y
    as they write it (to the bits of NumPy's add after them), before the relu; another size or
    dtype is refused."""
    native = require_native("miltext.interpreter._fastkernels")
    if not fast_kernels.multiplies(native):
        pytest.skip("NumPy's BLAS is not its bundled OpenBLAS: the C kernels cannot multiply")
    x, w, b = f32(1, 8, 9, 9), f32(16, 8, 3, 3), f32(16)
    residual = f32(1, 16, 9, 9)
    geometry = np.array([3, 3, 1, 1, 1, 1, 1, 1], np.int64)
    u = np.empty((16, 16, 8), np.float32)
    native.winograd_weight(w, u)
    v = np.empty((1, 16, 8, 25), np.float32)
    calls = {
        "conv_bands": lambda y, r, relu: native.conv_bands(x, w, b, y, np.zeros(1, np.int64), geometry, 1, 8, 9, 9, 16,
                                                           9, 9, 2, 16, relu, r),
        "winograd_bands": lambda y, r, relu: native.winograd_bands(x, u, b, y, np.zeros(1, np.int64), 1, 8, 9, 9, 16,
                                                                   9, 9, 1, 1, 2, relu, None, r),
        "winograd_outputs": lambda y, r, relu: native.winograd_outputs(x, w, b, y, v, np.zeros(4, np.int64), 1, 8, 9,
                                                                       9, 16, 9, 9, 1, 1, 16, relu, r),
    }
    for name, call in calls.items():
        alone, added, relu = (np.full((1, 16, 9, 9), np.nan, np.float32) for _ in range(3))
        call(alone, None, False)
        call(added, residual, False)
        call(relu, residual, True)
        assert added.tobytes() == (alone + residual).tobytes(), name
        assert relu.tobytes() == np.maximum(alone + residual, 0).tobytes(), name
        with pytest.raises(ValueError, match="as many values as y"):
            call(np.empty((1, 16, 9, 9), np.float32), residual[:, :8], False)
        with pytest.raises(TypeError, match="float32"):
            call(np.empty((1, 16, 9, 9), np.float32), residual.astype(np.float64), False)
