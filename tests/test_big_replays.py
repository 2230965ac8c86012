"""Big replays (issue 30, replays.py): a conv or a pool in the C kernels offers its C call, with
the relu and add folded into it, as a replay, and a block whose every step can replay runs flat
from its third run on: no kernel runs, and the outputs are the kernels' to the bit. A flat run
is one the kernels' memory checks let through: a lower --max-memory, more memory held as the
block starts, other threads or an observer send the run back to the kernels, which check and
say what they said before, at the same op."""
import os

import numpy as np
import pytest

import miltext
from miltext.interpreter import RunError, Session, blas_threads, parallel, replays
from support.fused_runs import program
from support.native import require_native

RNG = np.random.default_rng(17)


def const(name: str, value: np.ndarray) -> str:
    """An op line making `value` (float32) a const of the block."""
    shape = ", ".join(map(str, value.shape))
    flat = ", ".join(repr(float(v)) for v in value.ravel())
    return f'    %{name}: ({shape}, fp32) = const(val=({shape}, fp32)([{flat}]), name="{name}")\n'


# a stem and a residual block: conv -> relu -> pool, conv -> relu, conv -> add the pool -> relu
BODY = """    %c1: (1, 16, 40, 40, fp32) = conv(x=%x, weight=%w1, pad_type="same")
    %r1: (1, 16, 40, 40, fp32) = relu(x=%c1)
    %p: (1, 16, 20, 20, fp32) = max_pool(x=%r1, kernel_sizes=[3, 3], strides=[2, 2], pad_type="same")
    %c2: (1, 16, 20, 20, fp32) = conv(x=%p, weight=%w2, pad_type="same")
    %r2: (1, 16, 20, 20, fp32) = relu(x=%c2)
    %c3: (1, 16, 20, 20, fp32) = conv(x=%r2, weight=%w3, bias=%b3, pad_type="same", dilations=[2, 2])
    %s: (1, 16, 20, 20, fp32) = add(x=%c3, y=%p)
    %y: (1, 16, 20, 20, fp32) = relu(x=%s)
"""
TEXT = program(const("w1", RNG.standard_normal((16, 8, 3, 3)).astype(np.float32) / 8)
               + const("w2", RNG.standard_normal((16, 16, 3, 3)).astype(np.float32) / 10)
               + const("w3", RNG.standard_normal((16, 16, 3, 3)).astype(np.float32) / 10)
               + const("b3", RNG.standard_normal(16).astype(np.float32)) + BODY,
               "%x: (1, 8, 40, 40, fp32), %unread: (is0, fp32)", "%y")
X = RNG.standard_normal((1, 8, 40, 40)).astype(np.float32)
SMALL = np.zeros(4, np.float32)


@pytest.fixture
def native(monkeypatch):
    """The C kernels, two cores, an idle machine (so a run lends its threads)."""
    require_native("miltext.interpreter._fastkernels")
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    monkeypatch.setattr(parallel, "_CORES", max(parallel._CORES, 2))


@pytest.fixture
def flat_runs(monkeypatch):
    """How many runs of a block went flat."""
    runs = []
    real = replays._Flat.__call__

    def counted(self, *args):
        runs.append(len(self.program))
        return real(self, *args)
    monkeypatch.setattr(replays._Flat, "__call__", counted)
    return runs


class threads:
    """NumPy's BLAS lending `count` threads to the runs inside."""
    def __init__(self, count: int):
        self.count, self.setter = count, blas_threads._local_setter()

    def __enter__(self):
        self.before = self.setter(self.count) if self.setter is not None else None

    def __exit__(self, *exc):
        if self.setter is not None:
            self.setter(self.before)


def observed(text: str, inputs: dict) -> tuple:
    """A fresh session's outputs and every value an observer saw (each op run alone)."""
    seen = {}
    out = Session(miltext.loads(text)).run(inputs, observer=lambda fn, path, op, values: seen.update(values))
    return out, seen


@pytest.mark.parametrize("count", [1, 2])
def test_a_residual_block_runs_flat_to_the_bit_of_its_ops(native, kernel_calls, flat_runs, count):
    want, _ = observed(TEXT, {"x": X, "unread": SMALL})
    del kernel_calls[:]
    session = Session(miltext.loads(TEXT))
    with threads(count):
        outs = [session.run({"x": X, "unread": SMALL})["y"] for _ in range(5)]
    # run 1 makes the replays, run 2 runs every kernel again (checking memory) and settles
    assert kernel_calls == ["conv", "max_pool", "conv", "conv"] * 2
    assert len(flat_runs) == 3
    for y in outs:
        assert y.tobytes() == want["y"].tobytes()


def test_a_lower_memory_limit_runs_the_kernels_and_says_what_they_say(native, flat_runs):
    session = Session(miltext.loads(TEXT))
    inputs = {"x": X, "unread": SMALL}
    for _ in range(3):
        session.run(inputs, max_memory=1 << 30)
    assert len(flat_runs) == 1
    # the stem's output (100 KiB) fits alone; with the input and the pool's, not
    with pytest.raises(RunError) as flat:
        session.run(inputs, max_memory=150_000)
    with pytest.raises(RunError) as fresh:
        Session(miltext.loads(TEXT)).run(inputs, max_memory=150_000)
    assert flat.value.message == fresh.value.message and flat.value.loc == fresh.value.loc
    assert "max-memory" in flat.value.message
    assert len(flat_runs) == 1
    session.run(inputs, max_memory=2 << 30)           # more than the settling run's: flat again
    assert len(flat_runs) == 2


def test_more_memory_held_as_the_block_starts_runs_the_kernels(native, flat_runs, kernel_calls):
    session = Session(miltext.loads(TEXT))
    for _ in range(3):
        session.run({"x": X, "unread": SMALL})
    assert len(flat_runs) == 1
    del kernel_calls[:]
    big = np.zeros(50_000, np.float32)      # a value of the run no op reads: it is held all the same
    y = session.run({"x": X, "unread": big})["y"]
    assert len(flat_runs) == 1 and kernel_calls == ["conv", "max_pool", "conv", "conv"]
    assert y.tobytes() == observed(TEXT, {"x": X, "unread": big})[0]["y"].tobytes()


def test_other_threads_run_the_kernels_again(native, flat_runs):
    session = Session(miltext.loads(TEXT))
    with threads(2):
        for _ in range(3):
            session.run({"x": X, "unread": SMALL})
    assert len(flat_runs) == 1
    with threads(1):
        y = session.run({"x": X, "unread": SMALL})["y"]
        assert len(flat_runs) == 1
        with_one = Session(miltext.loads(TEXT)).run({"x": X, "unread": SMALL})["y"]
    assert y.tobytes() == with_one.tobytes()


def test_an_observer_after_flat_runs_sees_every_op_alone(native, flat_runs):
    session = Session(miltext.loads(TEXT))
    for _ in range(3):
        session.run({"x": X, "unread": SMALL})
    assert len(flat_runs) == 1
    seen = {}
    session.run({"x": X, "unread": SMALL}, observer=lambda fn, path, op, values: seen.update(values))
    _, want = observed(TEXT, {"x": X, "unread": SMALL})
    assert set(seen) == set(want) >= {"c1", "r1", "c3", "s", "y"}
    for name, value in want.items():
        assert seen[name].tobytes() == value.tobytes(), name
    assert (seen["c3"] < 0).any()        # the conv's own value, before the add and the relu
    # the observed run made no big replays (its convs applied no relu nor add): as after a
    # first run, the next run makes them, the one after settles, the third runs flat
    for _ in range(3):
        assert session.run({"x": X, "unread": SMALL})["y"].tobytes() == want["y"].tobytes()
    assert len(flat_runs) == 2


def test_a_flat_run_stops_in_time_at_its_op(native, flat_runs):
    session = Session(miltext.loads(TEXT, "block.mil"))
    for _ in range(3):
        session.run({"x": X, "unread": SMALL})
    with pytest.raises(RunError, match=r"longer than 1e-09 s \(--timeout\); stopped at conv") as stopped:
        session.run({"x": X, "unread": SMALL}, timeout=1e-9)
    assert len(flat_runs) == 2 and stopped.value.loc[0] == 3 + 4       # the first conv, after the consts


def test_a_loop_body_of_convs_runs_flat_and_gives_each_pass_its_value(native, flat_runs):
    """A while_loop's body (a conv with its relu folded in, its weight a const of the body,
    and a counter) is a block of its own: from its third pass on it runs flat, checked against
    the bytes the scopes around it hold; each pass's result is the kernels'."""
    w = RNG.standard_normal((8, 8, 3, 3)).astype(np.float32) / 6
    text = program("""    %y, %k = while_loop(loop_vars=(%x, %n), name="passes")
      block1(%a: (1, 8, 12, 12, fp32), %i: (1, fp32)) {
        %c: (1, bool) = greater(x=%i, y=0.0)
      } -> (%c)
      block2(%a: (1, 8, 12, 12, fp32), %i: (1, fp32)) {
    """ + const("w", w) + """        %b: (1, 8, 12, 12, fp32) = conv(x=%a, weight=%w, pad_type="same")
        %r: (1, 8, 12, 12, fp32) = relu(x=%b)
        %j: (1, fp32) = sub(x=%i, y=1.0)
      } -> (%r, %j)
""", "%x: (1, 8, 12, 12, fp32), %n: (1, fp32)", "%y")
    x = RNG.standard_normal((1, 8, 12, 12)).astype(np.float32)
    session = Session(miltext.loads(text))
    for passes in (6, 1, 6):
        got = session.run({"x": x, "n": np.array([passes], np.float32)})["y"]
        want = Session(miltext.loads(text)).run({"x": x, "n": np.array([passes], np.float32)},
                                                observer=lambda *args: None)["y"]
        assert got.tobytes() == want.tobytes()
    # the body's flat runs (its conv and its sub): passes 3 to 6 of the first run, then every pass
    assert flat_runs.count(2) == 4 + 1 + 6


def test_a_conv_whose_weight_is_made_at_each_run_keeps_no_replay(native, kernel_calls, flat_runs):
    """conv_quantized dequantizes its weight at each run: a replay would hold that fp32 copy
    between runs, beyond what the run's memory checks counted, so its kernel runs every time."""
    q = RNG.integers(0, 255, (8, 8, 3, 3), dtype=np.uint8)
    text = program(f'    %c: (1, 8, 16, 16, fp32) = conv_quantized(x=%x, weight=(8, 8, 3, 3, uint8)({q.ravel().tolist()}), '
                   'quantization_type="linear", quant_scale=fp32(0.01), quant_bias=fp32(-1.0), pad_type="same")\n'
                   '    %y: (1, 8, 16, 16, fp32) = relu(x=%c)\n', "%x: (1, 8, 16, 16, fp32)", "%y")
    x = RNG.standard_normal((1, 8, 16, 16)).astype(np.float32)
    want = observed(text, {"x": x})[0]["y"]
    del kernel_calls[:]
    session = Session(miltext.loads(text))
    for _ in range(4):
        assert session.run({"x": x})["y"].tobytes() == want.tobytes()
    assert kernel_calls.count("conv_quantized") == 4 and not flat_runs
    assert not any(step.replay and step.replay.big for _, steps in session._evaluator._plans.values()
                   for step in steps)
