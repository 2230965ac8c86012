"""miltext run against the source framework: torch models converted by coremltools
(tests/run_cases, made by scripts/make_run_fixtures.py) run by the NumPy interpreter, no torch
needed, their outputs held to torch's; and each kernel family on edge cases against NumPy."""
import glob
import os

import numpy as np
import pytest

import miltext
from miltext.interpreter import RunError, run
from miltext.model.io import read_model

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = sorted(os.path.basename(p)[:-len(".npz")] for p in glob.glob(os.path.join(HERE, "run_cases", "*.npz")))


def run_case(name):
    model = read_model(os.path.join(HERE, "run_cases", name + ".mlpackage"))
    data = np.load(os.path.join(HERE, "run_cases", name + ".npz"))
    inputs = {k[3:]: data[k] for k in data.files if k.startswith("in_")}
    expected = {k[4:]: data[k] for k in data.files if k.startswith("out_")}
    return run(model.program, inputs, weights=model.folder), expected


@pytest.mark.parametrize("name", CASES)
def test_a_converted_torch_model_computes_what_torch_did(name):
    got, expected = run_case(name)
    assert set(got) == set(expected)
    for key, want in expected.items():
        out = got[key].astype(np.float64)
        scale = max(np.abs(want).max(), 1e-6)
        worst = np.abs(out - want).max() / scale
        # fp32: Core ML's own tolerance for fp32 (1e-4 of the output's scale); fp16: 1e-2
        assert worst <= (1e-2 if name.endswith("fp16") else 1e-4), f"{key}: {worst:.3g} of the scale"
        assert got[key].dtype == (np.float16 if name.endswith("fp16") else np.float32)


def test_the_cases_are_there():
    assert {"mlp_fp32", "cnn_fp32", "transformer_fp32", "transformer_fp16", "unet_fp32", "lstm_fp32"} <= set(CASES)


PROGRAM = """main[CoreML7](%x: (2, 3, fp32)) {
  block0() {
    %y = %OP
  } -> (%y)
}
"""


def one_op(op: str, x) -> np.ndarray:
    return run(miltext.loads(PROGRAM.replace("%OP", op)), {"x": np.asarray(x, np.float32)})["y"]


X = np.array([[-1.5, 0.0, 2.0], [np.inf, -np.inf, 0.5]], np.float32)


@pytest.mark.parametrize("op, expect", [
    ("relu(x=%x)", np.maximum(X, 0)),
    ("add(x=%x, y=[1.0, 2.0, 3.0])", X + [1, 2, 3]),                       # broadcast from the end
    ("mul(x=%x, y=[[2.0], [3.0]])", X * [[2], [3]]),
    ("reduce_sum(x=%x, axes=[-1], keep_dims=True)", X.sum(-1, keepdims=True)),
    ("reduce_max(x=%x, axes=[0])", X.max(0)),
    ("transpose(x=%x, perm=[1, 0])", X.T),
    ("slice_by_index(x=%x, begin=[0, 1], end=[2, 3], stride=[1, 1])", X[:, 1:3]),
    ("concat(values=(%x, %x), axis=-1, interleave=False)", np.concatenate([X, X], -1)),
    ("clip(x=%x, alpha=-1.0, beta=1.0)", np.clip(X, -1, 1)),
    ("softmax(x=[[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]], axis=-1)", None),
])
def test_one_op_against_numpy(op, expect):
    got = one_op(op, X)
    if expect is None:
        e = np.exp(np.array([[1, 2, 3], [0, 0, 0]], np.float64))
        expect = e / e.sum(-1, keepdims=True)
        np.testing.assert_allclose(got, expect, rtol=1e-6)
        return
    np.testing.assert_array_equal(got, np.asarray(expect, np.float32))


def test_an_fp16_program_computes_in_fp16():
    text = """main[CoreML7](%x: (3, fp16)) {
  block0() {
    %y: (3, fp16) = add(x=%x, y=fp16([0.0004883, 1.0, 65504.0]), name="y")
  } -> (%y)
}
"""
    got = run(miltext.loads(text), {"x": np.array([1.0, 2.0, 65504.0], np.float32)})["y"]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, np.array([1.0, 3.0, np.inf], np.float16))   # 1 + 2^-11 rounds to 1; overflow is inf


def test_an_op_with_no_kernel_is_an_error_naming_it():
    text = PROGRAM.replace("%y = %OP", '%y: (2, 3, fp32) = custom_layer(x=%x, name="y")')
    with pytest.raises(RunError, match=r"3:5: miltext run has no kernel for custom_layer"):
        run(miltext.loads(text), {"x": X})


def test_inputs_that_do_not_fit_the_function_are_errors():
    program = miltext.loads(PROGRAM.replace("%OP", "relu(x=%x)"))
    with pytest.raises(RunError, match="input %x is not given"):
        run(program, {})
    with pytest.raises(RunError, match=r"input %x is \(3, 2\), but dim 0 must be 2"):
        run(program, {"x": np.zeros((3, 2))})
    with pytest.raises(RunError, match="has no input named z"):
        run(program, {"x": X, "z": X})


def test_a_kv_cache_state_is_carried_from_step_to_step():
    path = os.path.join(os.path.dirname(HERE), "examples", "kv_cache", "model.mil")
    model = read_model(path)
    fn = model.program.functions["main"]
    from miltext.ir import StateType
    states = {v.name: np.zeros([d for d in v.type.wrapped.shape], np.float16)
              for v in fn.inputs if isinstance(v.type, StateType)}
    inputs = {v.name: np.ones([d for d in v.type.shape], np.float16) for v in fn.inputs if not isinstance(v.type, StateType)}
    before = {k: v.copy() for k, v in states.items()}
    first = run(model.program, inputs, states=states, weights=model.folder)
    assert any(not np.array_equal(before[k], states[k]) for k in states), "write_state changed nothing"
    second = run(model.program, inputs, states=states, weights=model.folder)
    assert set(first) == set(second)


def test_docs_list_every_op_it_runs():
    from miltext.interpreter.registry import supported
    with open(os.path.join(os.path.dirname(HERE), "docs", "run.md"), encoding="utf-8") as f:
        doc = f.read()
    assert [op for op in supported() if f"`{op}`" not in doc] == []


def test_the_command_line_checks_outputs_against_a_reference(tmp_path):
    from miltext.cli import main
    data = np.load(os.path.join(HERE, "run_cases", "mlp_fp32.npz"))
    np.save(tmp_path / "x.npy", data["in_x0"])
    reference = {k[4:]: data[k] for k in data.files if k.startswith("out_")}
    np.savez(tmp_path / "ref.npz", **reference)
    model = os.path.join(HERE, "run_cases", "mlp_fp32.mlpackage")
    assert main(["run", model, "-i", f"x0={tmp_path / 'x.npy'}", "--expect", str(tmp_path / "ref.npz")]) == 0
    assert main(["run", model, "-i", f"x0={tmp_path / 'x.npy'}", "-o", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out[next(iter(reference))], next(iter(reference.values())), rtol=1e-4)
    off = {k: v + 1 for k, v in reference.items()}
    np.savez(tmp_path / "off.npz", **off)
    assert main(["run", model, "-i", f"x0={tmp_path / 'x.npy'}", "--expect", str(tmp_path / "off.npz")]) == 1


def test_the_command_line_places_an_error_in_the_text(tmp_path, capsys):
    from miltext.cli import main
    path = tmp_path / "m.mil"
    path.write_text(PROGRAM.replace("%y = %OP", '%y: (2, 3, fp32) = custom_layer(x=%x, name="y")'))
    assert main(["run", str(path), "-i", "x=[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:3:5: error: miltext run has no kernel for custom_layer") and "^" in err


# ---- real conversions (tests/corpus/conversions) against torch ------------------------------------
CONVERSIONS = os.path.join(HERE, "corpus", "conversions")
REFERENCES = sorted(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(HERE, "run_cases", "conversions", "*.npz")))
# Compressed weights are not torch's: the bound is the compression's own error (measured: int8
# 0.6%, int4 blockwise 9%, a 4-bit palette 12% of the logits' scale), far above a kernel's.
BOUND = {"gpt2_int8": 2e-2, "gpt2_int4_blockwise": 0.15, "gpt2_palettized": 0.2}


def conversion(name, tmp_path):
    import shutil
    (tmp_path / "weights").mkdir()
    shutil.copy(os.path.join(CONVERSIONS, name + ".weight.bin"), tmp_path / "weights" / "weight.bin")
    with open(os.path.join(CONVERSIONS, name + ".pb"), "rb") as f:
        return miltext.Program.from_proto(f.read()), str(tmp_path)


def assert_close(got, want, bound, what):
    worst = np.abs(np.asarray(got, np.float64) - want).max() / max(np.abs(want).max(), 1e-6)
    assert np.asarray(got).shape == want.shape and worst <= bound, f"{what}: {worst:.3g} of the scale (bound {bound})"


@pytest.mark.parametrize("name", [n for n in REFERENCES if not n.startswith("llama")])
def test_a_real_conversion_computes_what_torch_did(name, tmp_path):
    program, weights = conversion(name, tmp_path)
    data = np.load(os.path.join(HERE, "run_cases", "conversions", name + ".npz"))
    got = run(program, {k[3:]: data[k] for k in data.files if k.startswith("in_")}, weights=weights)
    fp32 = program.functions["main"].block.outputs and got[next(iter(got))].dtype == np.float32
    for key in (k for k in data.files if k.startswith("out_")):
        assert_close(got[key[4:]], data[key], BOUND.get(name, 1e-4 if fp32 else 1e-2), f"{name} %{key[4:]}")


def test_a_stateful_llama_decodes_step_by_step_as_torch_does(tmp_path):
    program, weights = conversion("llama_kv_cache", tmp_path)
    data = np.load(os.path.join(HERE, "run_cases", "conversions", "llama_kv_cache.npz"))
    states = {"key_cache": np.zeros((2, 1, 2, 16, 8), np.float16), "value_cache": np.zeros((2, 1, 2, 16, 8), np.float16)}
    for step in range(3):   # a prompt of three tokens, then one token at a time
        got = run(program, {"ids": data[f"step{step}_in_ids"], "causal_mask": data[f"step{step}_in_causal_mask"]},
                  states=states, weights=weights)
        assert_close(got["logits"], data[f"step{step}_out_logits"], 1e-2, f"step {step} logits")
        for state in states:    # the cache after each step too
            assert_close(states[state], data[f"step{step}_state_{state}"], 1e-2, f"step {step} {state}")


def _program(body: str, inputs: str = "%x: (2, 3, fp32)"):
    return miltext.loads(f"main[CoreML7]({inputs}) {{\n  block0() {{\n{body}\n  }} -> (%y)\n}}\n")


def test_quantize_then_dequantize_per_channel():
    x = np.array([[0.5, -1.0, 2.0], [3.0, 0.0, -0.25]], np.float32)
    program = _program('    %q = quantize(input=%x, scale=[0.5, 0.25, 1.0], zero_point=int8([1, 0, -1]), axis=1, output_dtype="int8")\n'
                       '    %y = dequantize(input=%q, scale=[0.5, 0.25, 1.0], zero_point=int8([1, 0, -1]), axis=1)')
    scale, zero = np.array([0.5, 0.25, 1.0]), np.array([1, 0, -1])
    q = np.clip(np.round(x / scale) + zero, -128, 127)
    np.testing.assert_array_equal(run(program, {"x": x})["y"], ((q - zero) * scale).astype(np.float32))


def test_crop_and_reverse_sequence():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    got = run(_program("    %y = crop(x=%x, crop_height=[1, 2], crop_width=[0, 3])", "%x: (2, 3, 4, 5, fp32)"), {"x": x})["y"]
    np.testing.assert_array_equal(got, x[..., 1:2, 0:2])
    x = np.arange(2 * 4, dtype=np.float32).reshape(2, 4)
    got = run(_program("    %y = reverse_sequence(x=%x, lengths=[3, 1], seq_axis=1, batch_axis=0)", "%x: (2, 4, fp32)"), {"x": x})["y"]
    np.testing.assert_array_equal(got, [[2, 1, 0, 3], [4, 5, 6, 7]])


def test_local_response_norm_sums_neighbouring_channels():
    x = np.random.default_rng(2).standard_normal((1, 5, 2, 2)).astype(np.float32)
    got = run(_program("    %y = local_response_norm(x=%x, size=3, alpha=0.1, beta=0.75, k=2.0)", "%x: (1, 5, 2, 2, fp32)"), {"x": x})["y"]
    want = np.empty_like(x)
    for c in range(5):
        around = (x[:, max(c - 1, 0):c + 2] ** 2).sum(axis=1)
        want[:, c] = x[:, c] / (2.0 + 0.1 / 3 * around) ** 0.75
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_rnn_steps_through_time():
    rng = np.random.default_rng(3)
    x, w_ih, w_hh, b = (rng.standard_normal(s).astype(np.float32) for s in ((4, 1, 2), (3, 2), (3, 3), (3,)))
    lit = lambda a: str(a.tolist())
    program = _program(f"    %h0 = fill(shape=[1, 3], value=0.0)\n"
                       f"    %y, %h = rnn(x=%x, initial_h=%h0, weight_ih={lit(w_ih)}, weight_hh={lit(w_hh)}, bias={lit(b)}, "
                       f"output_sequence=True, direction=\"forward\", activation=\"tanh\")", "%x: (4, 1, 2, fp32)")
    h, want = np.zeros((1, 3), np.float32), []
    for t in range(4):
        h = np.tanh(x[t] @ w_ih.T + h @ w_hh.T + b)
        want.append(h)
    np.testing.assert_allclose(run(program, {"x": x})["y"], np.stack(want), rtol=1e-5)


def test_every_op_of_the_corpus_has_a_kernel():
    """The op types the real programs of tests/corpus and examples/ use (the edge corpus's made-up
    ops aside) all run."""
    from miltext.interpreter.registry import supported
    made_up = {"custom_pair", "empty_args", "no_outputs_op", "shape_thing"}

    def types(block):
        for op in block.operations:
            yield op.type
            for inner in op.blocks:
                yield from types(inner)
    used = set()
    for pb in glob.glob(os.path.join(HERE, "corpus", "**", "*.pb"), recursive=True):
        with open(pb, "rb") as f:
            program = miltext.Program.from_proto(f.read())
        used |= {t for fn in program.functions.values() for b in fn.blocks.values() for t in types(b)}
    assert sorted(used - made_up - set(supported())) == []


def test_weights_named_in_npy_and_safetensors_files_run(tmp_path):
    """A hand-written model whose weights are files beside it runs without being built."""
    rng = np.random.default_rng(4)
    w, b = rng.standard_normal((4, 3)).astype(np.float32), rng.standard_normal(4)
    np.save(tmp_path / "w.npy", w)
    np.save(tmp_path / "b.npy", b)    # float64 in the file: the text narrows it
    (tmp_path / "m.mil").write_text(
        "main[CoreML7](%x: (2, 3, fp32)) {\n  block0() {\n"
        '    %w: (4, 3, fp32) = const(val=(4, 3, fp32)(npy("w.npy")), name="w")\n'
        '    %b: (4, fp32) = const(val=(4, fp32)(npy("b.npy", from=fp64)), name="b")\n'
        "    %y = linear(x=%x, weight=%w, bias=%b)\n  } -> (%y)\n}\n")
    model = read_model(str(tmp_path / "m.mil"))
    x = rng.standard_normal((2, 3)).astype(np.float32)
    got = run(model.program, {"x": x}, weights=model.folder)["y"]
    np.testing.assert_allclose(got, x @ w.T + b.astype(np.float32), rtol=1e-6)


def test_the_command_line_says_what_is_wrong_with_its_inputs(tmp_path, capsys):
    from miltext.cli import main
    model = os.path.join(os.path.dirname(HERE), "examples", "mlp", "model.mil")
    (tmp_path / "junk.npy").write_bytes(b"not an array")
    for args, says in [(["-i", "z=[[1.0]]"], "main has no input named z (it takes %x)"),
                       (["-i", "x=[[1.0]]"], "input %x is (1, 1), but dim 1 must be 8"),
                       (["-i", f"x={tmp_path / 'junk.npy'}"], "not a .npy file (it does not start with numpy's header)"),
                       (["-i", "x=[[1.0"], "is neither a .npy file nor a literal"),
                       ([], "input %x is not given")]:
        assert main(["run", model, *args]) == 1
        err = capsys.readouterr().err
        assert says in err and "error:" in err and "Traceback" not in err
