"""miltext.Session (issue 30): a program prepared once and run many times gives what one-shot
runs give, reads its weights once (memory-mapped), hands out arrays of the caller's own, and
shows an observer every op's outputs with the pass of the loop they come from; the
vectorized erf and GELU hold to their exact definitions (conv's batched product is held
to its definition in test_interpreter_ops.py)."""
import gc
import math
import mmap
import os
import weakref

import numpy as np
import pytest

import miltext
from miltext.cli import main as cli
from miltext.interpreter import RunError, Session, run
from miltext.interpreter.evaluator import Evaluator
from miltext.model.io import read_model

HERE = os.path.dirname(os.path.abspath(__file__))


def case(name):
    model = read_model(os.path.join(HERE, "run_cases", name + ".mlpackage"))
    data = np.load(os.path.join(HERE, "run_cases", name + ".npz"))
    return model, {k[3:]: data[k] for k in data.files if k.startswith("in_")}


@pytest.mark.parametrize("name", ["cnn_fp32", "transformer_fp16", "lstm_fp32"])
def test_a_session_reads_its_weights_once_and_gives_what_one_run_gives(name, monkeypatch):
    model, inputs = case(name)
    once = run(model.program, inputs, weights=model.folder)
    reads = []
    real = Evaluator.value
    monkeypatch.setattr(Evaluator, "value", lambda self, v: reads.append(v) or real(self, v))
    with miltext.Session(model.program, weights=model.folder) as session:
        first = session.run(inputs)
        assert reads, "the first run decodes the literals and weights"
        reads.clear()
        for _ in range(2):
            again = session.run(inputs)
            for key in once:
                np.testing.assert_array_equal(again[key], once[key])
                np.testing.assert_array_equal(first[key], once[key])
    assert reads == [], "later runs decode nothing"


def test_weights_are_views_of_the_mapped_file():
    model, inputs = case("cnn_fp32")
    session = Session(model.program, weights=model.folder)
    session.run(inputs)
    kept = [lit.array for _, steps in session._evaluator._plans.values() for step in steps
            for found in step.bindings.values() for lit in found if getattr(lit, "array", None) is not None]
    big = [a for a in kept if a.size >= 64]
    assert big, "the conv weights are kept"
    for array in big:
        base = array
        while isinstance(base, np.ndarray):
            base = base.base
        assert isinstance(getattr(base, "obj", base), mmap.mmap) and not array.flags.writeable


CONST_OUT = """main[CoreML7](%x: (3, fp32)) {
  block0() {
    %w: (3, fp32) = const(val=[1.0, 2.0, 3.0], name="w")
    %y: (3, fp32) = add(x=%x, y=%w, name="y")
  } -> (%y, %w)
}
"""


def test_the_caller_owns_the_outputs_a_later_run_is_unchanged():
    session = Session(miltext.loads(CONST_OUT))
    x = np.zeros(3, np.float32)
    out = session.run({"x": x})
    out["w"][:] = 100.0          # the caller's array, not the session's kept constant
    out["y"][:] = -1.0
    again = session.run({"x": x})
    np.testing.assert_array_equal(again["w"], [1, 2, 3])
    np.testing.assert_array_equal(again["y"], [1, 2, 3])


COUNT = """main[CoreML7](%x: (1, fp32)) {
  block0() {
    %s: (1, fp32) = mul(x=%x, y=2.0, name="s")
    %y: (1, fp32) = while_loop(loop_vars=(%s), name="loop")
      block1(%a: (1, fp32)) {
        %c: (1, bool) = less(x=%a, y=5.0, name="c")
      } -> (%c)
      block2(%a: (1, fp32)) {
        %b: (1, fp32) = add(x=%a, y=1.0, name="b")
      } -> (%b)
  } -> (%y)
}
"""


def test_an_observer_sees_each_op_by_name_and_loop_pass():
    seen = []
    session = Session(miltext.loads(COUNT))
    out = session.run({"x": np.array([1.0], np.float32)},
                      observer=lambda fn, path, op, values: seen.append((fn, path, op.type, {k: float(v[0]) for k, v in values.items()})))
    assert out["y"][0] == 5.0
    assert seen[0] == ("main", (), "mul", {"s": 2.0})
    body = [(path, values["b"]) for _, path, kind, values in seen if kind == "add"]
    assert body == [((("y", 1, 0),), 3.0), ((("y", 1, 1),), 4.0), ((("y", 1, 2),), 5.0)]
    conds = [path for _, path, kind, _ in seen if kind == "less"]
    assert conds == [(("y", 0, p),) for p in range(4)]       # the condition runs once more
    assert seen[-1][1:3] == ((), "while_loop")


def test_each_run_has_its_own_limits():
    session = Session(miltext.loads(COUNT))
    body = 'fill(shape=[4096, 4096], value=1.0, name="f")'
    big = Session(miltext.loads(f"main[CoreML7](%x: (1, fp32)) {{\n  block0() {{\n    %y: (4096, 4096, fp32) = {body}\n  }} -> (%y)\n}}\n"))
    with pytest.raises(RunError, match="more than --max-memory"):
        big.run({"x": np.ones(1, np.float32)}, max_memory=1 << 20)
    assert big.run({"x": np.ones(1, np.float32)})["y"].shape == (4096, 4096)
    assert session.run({"x": np.ones(1, np.float32)}, timeout=60)["y"][0] == 5.0


LINEAR = """main[CoreML7](%x: (4, 256, fp32)) {
  block0() {
    %w: (384, 256, fp32) = const(val=(384, 256, fp32)(npy("w.npy")), name="w")
    %b: (384, fp32) = const(val=(384, fp32)(npy("b.npy")), name="b")
    %y: (4, 384, fp32) = linear(x=%x, weight=%w, bias=%b, name="y")
  } -> (%y)
}
"""


def resident_bytes(path: str) -> int:
    """The bytes of `path`'s memory maps this process holds in memory (Linux's smaps)."""
    total, inside = 0, False
    with open("/proc/self/smaps") as f:
        for line in f:
            if line[:1].isdigit() or line[:1] in "abcdef":       # a mapping's header line
                inside = line.rstrip().endswith(path)
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1]) * 1024
    return total


def _linear_session(tmp_path, rows: int):
    """A Session of LINEAR with a (rows, 256) weight and its bias from .npy files, after one run
    checked against numpy: (session, model, weight, input, output)."""
    rng = np.random.default_rng(rows)
    w, b = rng.standard_normal((rows, 256)).astype(np.float32), rng.standard_normal(rows).astype(np.float32)
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "b.npy", b)
    (tmp_path / "m.mil").write_text(LINEAR.replace("384", str(rows)))
    assert cli(["build", str(tmp_path / "m.mil"), "-o", str(tmp_path / "m.mlpackage")]) == 0
    model = read_model(str(tmp_path / "m.mlpackage"))
    x = rng.standard_normal((4, 256)).astype(np.float32)
    session = Session(model.program, weights=model.folder)
    y = session.run({"x": x})["y"]
    np.testing.assert_allclose(y, x.astype(np.float64) @ w.T.astype(np.float64) + b, rtol=1e-5, atol=1e-4)
    return session, model, w, x, y


def _linear_weight(session):
    """The Literal the linear step of `session` reads its weight from."""
    (kept,), = [list(step.bindings["weight"]) for _, steps in session._evaluator._plans.values()
                for step in steps if step.op.type == "linear"]
    return kept


def test_a_linear_weight_is_kept_transposed_and_held_once(tmp_path):
    """linear keeps its weight transposed (the layout small products run fastest with) and lets
    go of the map's pages under it: memory holds the weight once; the values are linear's."""
    session, model, w, x, y = _linear_session(tmp_path, 384)
    np.testing.assert_array_equal(session.run({"x": x})["y"], y)
    kept = _linear_weight(session)
    (transposed,), = kept.plain.values()
    assert transposed.shape == (256, 384) and transposed.flags.c_contiguous
    np.testing.assert_array_equal(transposed, w.T)
    weight_file = os.path.join(model.folder, "weights", "weight.bin")
    assert os.path.getsize(weight_file) > w.nbytes
    assert resident_bytes(os.path.realpath(weight_file)) < w.nbytes // 4      # the bias and a few edge pages


def test_a_session_let_go_frees_its_weights_at_once():
    """No cycle holds a Session's plan: once the caller lets go of it, its kept weights and maps
    go at once, not at the next garbage collection (miltext.run is one Session)."""
    model, inputs = case("transformer_fp32")
    session = Session(model.program, weights=model.folder)
    session.run(inputs)
    session.run(inputs)
    kept = weakref.ref(session._evaluator)
    gc.disable()
    try:
        del session
        assert kept() is None
    finally:
        gc.enable()


def test_erf_and_gelu_of_many_values_hold_to_the_exact_definitions():
    x = np.concatenate([np.linspace(-8, 8, 20001), np.logspace(-20, 0.5, 500), -np.logspace(-20, 0.5, 500)]).astype(np.float32)
    exact = np.vectorize(math.erf)
    text = "main[CoreML7](%x: (21001, fp32)) {\n  block0() {\n    %y: (21001, fp32) = OP\n  } -> (%y)\n}\n"
    erf = run(miltext.loads(text.replace("OP", 'erf(x=%x, name="y")')), {"x": x})["y"]
    # within 4 float32 ulps (the whole-array fit in float32; math.erf per element is exact)
    np.testing.assert_allclose(erf, exact(x.astype(np.float64)), rtol=4.8e-7, atol=0)
    gelu = run(miltext.loads(text.replace("OP", 'gelu(x=%x, mode="EXACT", name="y")')), {"x": x})["y"]
    want = 0.5 * x.astype(np.float64) * (1 + exact(x.astype(np.float64) / math.sqrt(2)))
    np.testing.assert_allclose(gelu, want, rtol=1e-5, atol=1e-12)


REUSE = """main[CoreML7](%x: (4, 8, fp32)) {
  block0() {
    %a: (4, 8, fp32) = mul(x=%x, y=2.0, name="a")
    %b: (4, 8, fp32) = relu(x=%a, name="b")
    %c: (4, 8, fp32) = add(x=%b, y=%a, name="c")
    %d: (4, 8, fp32) = add(x=%c, y=%x, name="d")
    %e: (4, 8, fp32) = relu(x=%x, name="e")
    %w: (4, 8, fp32) = const(val=[[-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0]] * 4, name="w")
    %f: (4, 8, fp32) = add(x=%w, y=%w, name="f")
    %g: (4, 8, fp32) = relu(x=%w, name="g")
  } -> (%d, %e, %f, %g)
}
"""


def test_an_op_writes_into_a_dying_input_only_when_nothing_else_holds_it():
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(4, 8)
    before = x.copy()
    ids = {}
    text = REUSE.replace("[[-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0]] * 4",
                         str([[-1.0, 1.0, -1.0, 1.0, -1.0, 1.0, -1.0, 1.0]] * 4))
    session = Session(miltext.loads(text))
    for run_index in range(2):
        # the first run's kernels reuse a spent input (later runs replay these small ops, which
        # reuse none: replays.py)
        watch = (lambda f, p, op, v: ids.update({k: id(a) for k, a in v.items()})) if run_index == 0 else None
        out = session.run({"x": x}, observer=watch)
        a = 2 * before
        np.testing.assert_array_equal(out["d"], np.maximum(a, 0) + a + before)
        np.testing.assert_array_equal(out["e"], np.maximum(before, 0))
        w = np.array([[-1.0, 1.0] * 4] * 4, np.float32)
        np.testing.assert_array_equal(out["f"], w + w)
        np.testing.assert_array_equal(out["g"], np.maximum(w, 0))
        np.testing.assert_array_equal(x, before)        # the caller's input is never written
    assert ids["c"] == ids["d"] and ids["b"] != ids["a"]    # %a is read after relu: kept apart


@pytest.mark.parametrize("mask", [None, "bool", "float"])
def test_attention_is_the_definition_head_by_head(mask):
    rng = np.random.default_rng(2)
    q, k, v = (rng.normal(size=(2, 3, 5, 4)).astype(np.float32) for _ in range(3))
    m = {"bool": np.tril(np.ones((5, 5), bool)), "float": rng.normal(size=(5, 5)).astype(np.float32)}.get(mask)
    want = np.zeros((2, 3, 5, 4))
    for b in range(2):
        for h in range(3):        # the definition, one head at a time
            s = q[b, h].astype(np.float64) @ k[b, h].T.astype(np.float64) / 2.0
            if m is not None:
                s = np.where(m, s, -np.inf) if m.dtype == bool else s + m
            e = np.exp(s - s.max(-1, keepdims=True))
            want[b, h] = e / e.sum(-1, keepdims=True) @ v[b, h]
    args = "query=%q, key=%k, value=%v" + (", attn_mask=%m" if m is not None else "")
    mtype = "" if m is None else f", %m: (5, 5, {'bool' if m.dtype == bool else 'fp32'})"
    text = (f"main[CoreML8](%q: (2, 3, 5, 4, fp32), %k: (2, 3, 5, 4, fp32), %v: (2, 3, 5, 4, fp32){mtype}) {{\n"
            f'  block0() {{\n    %y: (2, 3, 5, 4, fp32) = scaled_dot_product_attention({args}, name="y")\n  }} -> (%y)\n}}\n')
    inputs = {"q": q, "k": k, "v": v} | ({} if m is None else {"m": m})
    np.testing.assert_allclose(run(miltext.loads(text), inputs)["y"], want, rtol=1e-5, atol=1e-6)


def test_a_big_linear_weight_is_multiplied_as_it_lies_in_the_file(tmp_path):
    """A weight past linear.SMALL_WEIGHT is not copied transposed (its products gain nothing
    from it, and the copy would raise the run's peak): it stays a view of the file's map."""
    from miltext.interpreter.kernels.linear import SMALL_WEIGHT
    rows = SMALL_WEIGHT // (256 * 4) + 16
    session = _linear_session(tmp_path, rows)[0]
    kept = _linear_weight(session)
    assert list(kept.plain.values()) == [(None,)]
    assert kept.array.shape == (rows, 256) and not kept.array.flags.owndata
