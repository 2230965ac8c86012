"""Replays (issue 30): after its first run a small op is computed straight from its inputs,
to the bit what its kernel gives; an input of another shape, layout or dtype, a parameter
that is a var, or a run with little memory sends it back to its kernel; an error in a
replayed op is said at its place as the kernel's would be. A block whose every op replayed
replays unchecked (a chain) while its inputs keep their layout, and stops at once when one
changes."""
import os
import time

import numpy as np
import pytest

import miltext
from miltext.interpreter import RunError, Session
from miltext.model.io import read_model

HERE = os.path.dirname(os.path.abspath(__file__))


def replayed(session) -> list:
    """The op types of the session's steps that hold a replay."""
    return [step.op.type for _, steps in session._evaluator._plans.values() for step in steps if step.replay]


def chained(session) -> bool:
    """Whether the next run of the main block replays unchecked (its inputs as last run's)."""
    chains = list(session._evaluator._chains.values())      # none before the first run
    return bool(chains) and chains[0].layout is not None


@pytest.mark.parametrize("name, kinds", [("transformer_fp32", {"linear", "matmul", "softmax", "layer_norm"}),
                                         ("transformer_fp16", {"linear", "matmul"}), ("mlp_fp16", {"linear"})])
def test_a_converted_models_small_ops_are_replayed_to_the_bit(name, kinds):
    model = read_model(os.path.join(HERE, "run_cases", name + ".mlpackage"))
    data = np.load(os.path.join(HERE, "run_cases", name + ".npz"))
    inputs = {k[3:]: data[k] for k in data.files if k.startswith("in_")}
    fresh = Session(model.program, weights=model.folder).run(inputs)
    session = Session(model.program, weights=model.folder)
    session.run(inputs)
    assert kinds <= set(replayed(session))
    for _ in range(3):
        again = session.run(inputs)
        for key, want in fresh.items():
            np.testing.assert_array_equal(again[key], want)
            assert again[key].dtype == want.dtype


NORM = """main[CoreML7](%x: (4, 8, fp32), %g: (8, fp32)) {
  block0() {
    %n = layer_norm(x=%x, axes=[-1], gamma=[1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0], beta=[0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5], epsilon=0.00001)
    %s = softmax(x=%n, axis=-1)
    %y = mul(x=%s, y=%g)
  } -> (%y)
}
"""


def _layer_norm_softmax(x, g):
    gamma = np.array([1.0, 2.0] * 4, np.float32)
    x64 = x.astype(np.float64)
    n = (x64 - x64.mean(-1, keepdims=True)) / np.sqrt(x64.var(-1, keepdims=True) + 1e-5) * gamma + 0.5
    e = np.exp(n - n.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True) * g


def test_inputs_of_another_layout_or_dtype_run_the_kernels():
    """The C kernels take C-contiguous float32 only: a replay made for one must not see
    another layout (a Fortran-ordered or strided input) nor a float64 input (cast by the run)."""
    session = Session(miltext.loads(NORM))
    rng = np.random.default_rng(1)
    g = rng.normal(size=8).astype(np.float32)
    for x in (rng.normal(size=(4, 8)).astype(np.float32), rng.normal(size=(4, 8)).astype(np.float32),
              np.asfortranarray(rng.normal(size=(4, 8)), np.float32), rng.normal(size=(8, 8)).astype(np.float32)[::2],
              rng.normal(size=(4, 8)), rng.normal(size=(4, 8)).astype(np.float32)):
        got = session.run({"x": x, "g": g[::-1].copy()[::-1]})["y"]
        np.testing.assert_allclose(got, _layer_norm_softmax(x.astype(np.float32), g), rtol=1e-5, atol=1e-6)
    assert {"layer_norm", "softmax", "mul"} <= set(replayed(session))


def test_a_chain_stops_when_an_input_changes_its_layout():
    session = Session(miltext.loads(NORM))
    rng = np.random.default_rng(2)
    g = rng.normal(size=8).astype(np.float32)
    contiguous = [rng.normal(size=(4, 8)).astype(np.float32) for _ in range(4)]
    states = []
    for x in contiguous[:3] + [np.asfortranarray(contiguous[3]), contiguous[0], contiguous[1], contiguous[2]]:
        states.append(chained(session))
        got = session.run({"x": x, "g": g})["y"]
        np.testing.assert_allclose(got, _layer_norm_softmax(x, g), rtol=1e-5, atol=1e-6)
    # run 1 makes the replays, run 2 replays every op checked, run 3 unchecked; the Fortran-
    # ordered input is checked (layer_norm's C kernel takes no other layout) and runs a kernel
    assert states == [False, False, True, True, False, False, True]


def test_a_function_of_flexible_shape_runs_each_shape():
    text = NORM.replace("(4, 8, fp32)", "(is0, 8, fp32)", 1)
    session = Session(miltext.loads(text))
    g = np.ones(8, np.float32)
    for rows in (3, 3, 5, 1):
        x = np.random.default_rng(rows).normal(size=(rows, 8)).astype(np.float32)
        np.testing.assert_allclose(session.run({"x": x, "g": g})["y"], _layer_norm_softmax(x, g), rtol=1e-5, atol=1e-6)


def test_a_parameter_given_by_a_var_is_read_at_every_run():
    text = """main[CoreML7](%x: (2, 6, fp32), %s: (2, int32)) {
  block0() {
    %y = reshape(x=%x, shape=%s)
    %z = transpose(x=%x, perm=[1, 0])
  } -> (%y, %z)
}
"""
    session = Session(miltext.loads(text))
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    for shape in ([3, 4], [4, 3], [6, 2]):
        got = session.run({"x": x, "s": np.array(shape, np.int32)})
        np.testing.assert_array_equal(got["y"], x.reshape(shape))
        np.testing.assert_array_equal(got["z"], x.T)
    assert replayed(session) == ["transpose"]


def test_an_error_in_a_replayed_op_is_said_at_its_place():
    text = """main[CoreML7](%x: (4, 3, fp32), %i: (2, int32)) {
  block0() {
    %y = gather(x=%x, indices=%i, axis=0)
  } -> (%y)
}
"""
    session = Session(miltext.loads(text, "model.mil"))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    for _ in range(2):
        np.testing.assert_array_equal(session.run({"x": x, "i": np.array([3, -4], np.int32)})["y"], x[[3, 0]])
    assert replayed(session) == ["gather"] and chained(session)
    bad = {"x": x, "i": np.array([1, 4], np.int32)}
    with pytest.raises(RunError) as replay:
        session.run(bad)
    with pytest.raises(RunError) as kernel:
        Session(miltext.loads(text, "model.mil")).run(bad)
    assert replay.value.loc == kernel.value.loc == (3, 5)
    assert replay.value.message == kernel.value.message
    assert "gather cannot run on these inputs: index 4 is out of bounds" in replay.value.message


def test_a_run_with_little_memory_checks_every_op():
    text = """main[CoreML7](%x: (64, 64, fp32)) {
  block0() {
    %y = add(x=%x, y=%x)
    %z = mul(x=%y, y=%y)
  } -> (%z)
}
"""
    session = Session(miltext.loads(text))
    x = np.ones((64, 64), np.float32)
    assert session.run({"x": x})["z"][0, 0] == 4.0
    assert set(replayed(session)) == {"add", "mul"}
    with pytest.raises(RunError, match="max-memory"):
        session.run({"x": x}, max_memory=20_000)     # one 16 KiB value fits, not two


def test_an_observer_sees_the_values_of_replayed_ops():
    text = """main[CoreML7](%x: (2, fp32)) {
  block0() {
    %y = add(x=%x, y=1.0)
    %z = mul(x=%y, y=3.0)
  } -> (%z)
}
"""
    session = Session(miltext.loads(text))
    seen = {}
    for value in (1.0, 2.0):
        session.run({"x": np.full(2, value, np.float32)},
                    observer=lambda fn, path, op, values: seen.update({k: float(v[0]) for k, v in values.items()}))
        assert seen == {"y": value + 1, "z": (value + 1) * 3}
    assert set(replayed(session)) == {"add", "mul"}


def test_a_loop_body_run_as_a_chain_counts_every_pass_and_stops_in_time():
    text = """main[CoreML7](%x: (1, fp32), %n: (1, fp32)) {
  block0() {
    %y, %k = while_loop(loop_vars=(%x, %n), name="count")
      block1(%a: (1, fp32), %i: (1, fp32)) {
        %c = greater(x=%i, y=0.0)
      } -> (%c)
      block2(%a: (1, fp32), %i: (1, fp32)) {
        %s = mul(x=%i, y=%i)
        %b = add(x=%a, y=%s)
        %j = sub(x=%i, y=1.0)
      } -> (%b, %j)
  } -> (%y)
}
"""
    session = Session(miltext.loads(text))
    got = session.run({"x": np.zeros(1, np.float32), "n": np.array([300], np.float32)})["y"]
    assert got[0] == sum(i * i for i in range(1, 301))
    flat = [chain for chain in session._evaluator._chains.values() if chain.run is not None]
    assert len(flat) == 2           # the condition and the body, once their ops replayed
    start = time.monotonic()
    with pytest.raises(RunError, match=r"while_loop count was stopped after [\d,]+ passes"):
        session.run({"x": np.zeros(1, np.float32), "n": np.array([1e9], np.float32)}, timeout=0.3)
    assert time.monotonic() - start < 3
