"""Weights by reference (npy(...), safetensors(...)) and blob offsets the weight file's layout
implies (plain `blob`): hand-written models built from checkpoints, checked from headers, and
model reviews in which an inserted op changes only its own lines."""
import os
import re

import numpy as np
import pytest
from safetensors.numpy import save_file

import miltext
from miltext.ir import Blob, Block, Function, Operation, Program, TensorType, Value, Var, WeightRef
from miltext.model import weight_refs
from miltext.model.weights import WeightReader, WeightWriter
from model_cases import assert_clean_failure, leftovers, miltext as run

RNG = np.random.default_rng(16)

MODEL = """main[CoreML7](%x: (1, 8, fp16)) {
  block0() {
    %w1: (16, 8, fp16) = const(val=(16, 8, fp16)(npy("w1.npy", from=fp32)), name="w1")
    %b1: (16, fp16) = const(val=(16, fp16)(safetensors("ckpt.safetensors", "layers.0.bias")), name="b1")
    %h: (1, 16, fp16) = linear(x=%x, weight=%w1, bias=%b1, name="h")
    %a: (1, 16, fp16) = relu(x=%h, name="a")
    %w2: (4, 16, fp16) = const(val=(4, 16, fp16)(safetensors("ckpt.safetensors", "layers.1.weight", from=fp32)), name="w2")
    %y: (1, 4, fp16) = linear(x=%a, weight=%w2, name="y")
  } -> (%y)
}
"""


@pytest.fixture
def checkpoint(tmp_path):
    """w1.npy (fp32) and ckpt.safetensors (an fp16 bias, an fp32 weight) beside model.mil."""
    arrays = {"w1": RNG.standard_normal((16, 8)).astype(np.float32),
              "layers.0.bias": RNG.standard_normal(16).astype(np.float16),
              "layers.1.weight": RNG.standard_normal((4, 16)).astype(np.float32)}
    np.save(tmp_path / "w1.npy", arrays["w1"])
    save_file({k: v for k, v in arrays.items() if k != "w1"}, str(tmp_path / "ckpt.safetensors"))
    (tmp_path / "model.mil").write_text(MODEL, encoding="utf-8")
    return arrays


def coremltools_program(path: str):
    import coremltools as ct
    from coremltools.converters.mil.frontend.milproto.load import load_mil_proto
    model = ct.models.MLModel(path, skip_model_load=True)
    spec = model.get_spec()
    return load_mil_proto(spec.mlProgram, spec.specificationVersion, model.weights_dir)


# ---- the text ------------------------------------------------------------------------------------

def test_references_read_and_print_back():
    program = miltext.loads(MODEL)
    ops = program.functions["main"].block.operations
    assert ops[0].attributes["val"].data == WeightRef("npy", "w1.npy", None, "fp32")
    assert ops[1].attributes["val"].data == WeightRef("safetensors", "ckpt.safetensors", "layers.0.bias")
    assert ops[0].attributes["val"].data.loc == (3, 54)
    assert miltext.dumps(program) == MODEL


def test_a_reference_is_not_a_proto_value():
    with pytest.raises(miltext.errors.ProgramError, match="read when a package is built"):
        miltext.loads(MODEL).to_bytes()


def test_from_takes_a_dtype_and_nothing_else():
    with pytest.raises(miltext.ParseError, match=r"takes the file and from=DTYPE.*not cast="):
        miltext.loads(MODEL.replace('from=fp32)), name="w1"', 'cast=fp32)), name="w1"'))


# ---- build (acceptance c) ------------------------------------------------------------------------

def test_a_hand_written_model_builds_from_npy_and_safetensors(checkpoint, tmp_path):
    result = run("build", "model.mil", "-o", "M.mlpackage", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    prog = coremltools_program(str(tmp_path / "M.mlpackage"))        # coremltools' own loader
    consts = {op.name: op.val.val for op in prog.functions["main"].find_ops(op_type="const")}
    assert np.array_equal(consts["w1"], checkpoint["w1"].astype(np.float16))          # cast: rounded
    assert np.array_equal(consts["b1"], checkpoint["layers.0.bias"])
    assert np.array_equal(consts["w2"], checkpoint["layers.1.weight"].astype(np.float16))
    # The package unpacks to plain blobs at the offsets the layout implies.
    run("unpack", "M.mlpackage", "out", cwd=tmp_path)
    text = (tmp_path / "out" / "model.mil").read_text()
    assert text.count("(blob)") == 3 and "npy(" not in text


@pytest.mark.parametrize("edit, place, message", [
    (("(16, 8, fp16)", "(8, 16, fp16)"), "3:54", "w1.npy has shape (16, 8), but the type says (8, 16)"),
    (('"layers.0.bias"', '"layers.0.b"'), "4:76",
     "ckpt.safetensors has no tensor 'layers.0.b'; it has layers.0.bias, layers.1.weight"),
    (('npy("w1.npy"', 'npy("w0.npy"'), "3:54", "no file w0.npy"),
    ((', from=fp32)), name="w2"', ')), name="w2"'), "7:62",
     "ckpt.safetensors tensor 'layers.1.weight' holds fp32, but the type says fp16; write from=fp32 to cast it"),
    (("", ""), None, None),
])
def test_check_and_build_find_each_wrong_reference_at_its_place(checkpoint, tmp_path, edit, place, message):
    (tmp_path / "model.mil").write_text(MODEL.replace(*edit), encoding="utf-8")
    checked = run("check", "model.mil", cwd=tmp_path)
    built = run("build", "model.mil", "-o", "M.mlpackage", cwd=tmp_path)
    if place is None:
        assert checked.returncode == 0 and built.returncode == 0
        return
    assert checked.returncode == 1 and f"model.mil:{place}: error: {message}" in checked.stdout
    assert_clean_failure(built)
    assert built.stderr.startswith(f"model.mil:{place}: error: {message}")
    assert not (tmp_path / "M.mlpackage").exists() and leftovers(tmp_path) == []


def test_check_reads_only_headers(checkpoint, tmp_path, monkeypatch):
    def no_data(*args, **kwargs):
        raise AssertionError("check read tensor data")
    monkeypatch.setattr(weight_refs, "arrays", no_data)
    monkeypatch.setattr(np, "fromfile", no_data)
    program = miltext.loads(MODEL)
    assert miltext.check(program, filename=str(tmp_path / "model.mil"), source=MODEL) == []


def test_casts_are_floats_to_floats_and_integers_in_range(tmp_path):
    np.save(tmp_path / "i.npy", np.array([[1, 200], [3, 4]], np.int32))
    text = 'main[CoreML7]() {\n  block0() {\n    %c: (2, 2, int8) = const(val=(2, 2, int8)(npy("i.npy", from=int32)), name="c")\n  } -> (%c)\n}\n'
    (tmp_path / "m.mil").write_text(text)
    result = run("build", "m.mil", "-o", "M.mlpackage", cwd=tmp_path)
    assert_clean_failure(result)
    assert "m.mil:3:51: error: i.npy has values outside int8's range [-128, 127]" in result.stderr
    (tmp_path / "m.mil").write_text(text.replace("int8", "fp16").replace("from=int32", "from=fp32"))
    result = run("check", "m.mil", cwd=tmp_path)
    assert "from=fp32, but i.npy holds int32" in result.stdout
    (tmp_path / "m.mil").write_text(text.replace("int8", "fp16"))
    result = run("check", "m.mil", cwd=tmp_path)
    assert "i.npy holds int32, which does not cast to fp16" in result.stdout


def test_tensors_are_appended_after_the_blobs_of_weight_bin(checkpoint, tmp_path):
    os.makedirs(tmp_path / "weights")
    old = RNG.standard_normal(20).astype(np.float16)
    with WeightWriter(tmp_path / "weights" / "weight.bin") as writer:
        assert writer.add("fp16", old) == 64
    text = MODEL.replace('    %y: (1, 4, fp16)', '    %k: (20, fp16) = const(val=(20, fp16)(blob(64)), name="k")\n    %y: (1, 4, fp16)')
    (tmp_path / "model.mil").write_text(text)
    result = run("build", "model.mil", "-o", "M.mlpackage", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with WeightReader(tmp_path / "M.mlpackage" / "Data" / "com.apple.CoreML" / "weights" / "weight.bin") as reader:
        blobs = reader.blobs()
        assert [b.dtype for b in blobs] == ["fp16"] * 4 and np.array_equal(reader.read(64), old)
    prog = coremltools_program(str(tmp_path / "M.mlpackage"))
    consts = {op.name: op.val.val for op in prog.functions["main"].find_ops(op_type="const")}
    assert np.array_equal(consts["k"], old) and np.array_equal(consts["b1"], checkpoint["layers.0.bias"])


def test_large_tensors_are_read_in_slices(checkpoint, tmp_path, monkeypatch):
    """Slices of a few rows give the same weight file as one read (the streaming path)."""
    run("build", "model.mil", "-o", "whole.mlpackage", cwd=tmp_path)
    monkeypatch.setattr(weight_refs, "CHUNK_BYTES", 40)    # two or three rows at a time
    model = miltext.model.read_model(str(tmp_path / "model.mil"))
    miltext.model.write_model(model, str(tmp_path / "sliced.mlpackage"))
    weights = [(tmp_path / p / "Data" / "com.apple.CoreML" / "weights" / "weight.bin").read_bytes()
               for p in ("whole.mlpackage", "sliced.mlpackage")]
    assert weights[0] == weights[1]


def test_a_reference_cannot_go_into_a_program_file(checkpoint, tmp_path):
    result = run("build", "model.mil", "-o", "p.pb", cwd=tmp_path)
    assert_clean_failure(result)
    assert result.stderr.startswith("model.mil:3:54: error: a weight in w1.npy is read when a package is built")
    # the way out it names exists, and does what it says
    assert "miltext.model.write_model" in result.stderr
    model = miltext.model.read_model(str(tmp_path / "model.mil"))
    miltext.model.write_model(model, str(tmp_path / "p.mlpackage"))
    assert (tmp_path / "p.mlpackage" / "Data" / "com.apple.CoreML" / "weights" / "weight.bin").stat().st_size > 64


def test_a_bf16_checkpoint_builds(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    w = RNG.standard_normal((3, 4)).astype(ml_dtypes.bfloat16)
    save_file({"w": w}, str(tmp_path / "c.safetensors"))
    # Core ML's ops take no bf16 (cast refuses it): the checkpoint's bf16 is read and narrowed as written
    (tmp_path / "m.mil").write_text('main[CoreML7]() {\n  block0() {\n    %c: (3, 4, fp16) = const(val=(3, 4, fp16)'
                                    '(safetensors("c.safetensors", "w", from=bf16)), name="c")\n'
                                    '    %y: (3, 4, fp32) = cast(x=%c, dtype="fp32", name="y")\n  } -> (%y)\n}\n')
    result = run("build", "m.mil", "-o", "M.mlpackage", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with WeightReader(tmp_path / "M.mlpackage" / "Data" / "com.apple.CoreML" / "weights" / "weight.bin") as reader:
        assert reader.data(64) == w.astype(np.float32).astype(np.float16).tobytes()


# ---- offsets the layout implies --------------------------------------------------------------------

def layers(n: int, inserted: bool) -> str:
    """A hand-written MLP of `n` layers; with `inserted`, one more layer after the second."""
    lines, x = [], "%x"
    for i in range(n):
        names = [str(i)] + (["extra"] if inserted and i == 1 else [])
        for name in names:
            lines.append(f'    %w{name}: (8, 8, fp16) = const(val=(8, 8, fp16)(npy("w{name}.npy")), name="w{name}")')
            lines.append(f'    %h{name}: (1, 8, fp16) = linear(x={x}, weight=%w{name}, name="h{name}")')
            x = f"%h{name}"
    return "main[CoreML7](%x: (1, 8, fp16)) {\n  block0() {\n" + "\n".join(lines) + f"\n  }} -> ({x})\n}}\n"


def test_an_inserted_layer_changes_only_its_own_lines(tmp_path):
    for name in [str(i) for i in range(6)] + ["extra"]:
        np.save(tmp_path / f"w{name}.npy", RNG.standard_normal((8, 8)).astype(np.float16))
    for label, inserted in (("old", False), ("new", True)):
        (tmp_path / f"{label}.mil").write_text(layers(6, inserted))
        assert run("build", f"{label}.mil", "-o", f"{label}.mlpackage", cwd=tmp_path).returncode == 0
    diff = run("diff", "old.mlpackage", "new.mlpackage", cwd=tmp_path)
    changed = [line for line in diff.stdout.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert [line[0] for line in changed] == ["+", "+", "-", "+"], diff.stdout      # and the next op's input
    assert changed[0].startswith("+    %wextra") and changed[1].startswith("+    %hextra")
    assert changed[2].replace("x=%h1", "x=%hextra")[1:] == changed[3][1:]
    # The text of an unpacked folder: the same lines change.
    import difflib
    texts = []
    for label in ("old", "new"):
        assert run("unpack", f"{label}.mlpackage", f"{label}_dir", cwd=tmp_path).returncode == 0
        texts.append((tmp_path / f"{label}_dir" / "model.mil").read_text().splitlines())
    unpacked = [line for line in difflib.unified_diff(*texts, lineterm="", n=0)
                if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert unpacked == [line.split("  # ")[0] for line in changed]
    # The weight file's text (what git diff shows for weight.bin): one blob line more, and its count.
    old, new = (run("print", f"{p}.mlpackage/Data/com.apple.CoreML/weights/weight.bin", cwd=tmp_path).stdout
                for p in ("old", "new"))
    added = set(new.splitlines()) - set(old.splitlines())
    assert len(added) == 2 and len(set(old.splitlines()) - set(new.splitlines())) == 1


def _program(blobs) -> Program:
    """consts holding `blobs`: [(type, Blob)]."""
    ops = [Operation("const", attributes={"val": Value(t, b), "name": Value.tensor(f"c{i}")},
                     outputs=[Var(f"c{i}", t)]) for i, (t, b) in enumerate(blobs)]
    return Program({"main": Function(opset="CoreML7", blocks={"CoreML7": Block(operations=ops)})})


def test_offsets_are_written_exactly_where_the_layout_departs():
    fp16 = TensorType("fp16", (10,))                        # 20 bytes: the next blob 128 later
    other = "@model_path/weights/other.bin"
    program = _program([(fp16, Blob(64)), (fp16, Blob(192)), (fp16, Blob(64)),       # a shared weight
                        (fp16, Blob(192)), (fp16, Blob(64, other)), (fp16, Blob(1024)),
                        (TensorType("fp16", (None,)), Blob(1152)), (fp16, Blob(1280)),
                        (TensorType("int4", (3,)), Blob(1408)), (fp16, Blob(1536))])
    text = miltext.dumps(program)
    written = re.findall(r"\((blob[^)]*\)?)\)", text)
    assert written == ["blob", "blob", "blob(64)", "blob", 'blob("@model_path/weights/other.bin")',
                       "blob(1024)", "blob", "blob(1280)", "blob", "blob"]
    assert miltext.loads(text).to_bytes() == program.to_bytes()
    from miltext.text.mil import fastprint
    if fastprint.available():
        assert fastprint.program_text(program.to_bytes()) == text


def test_a_blob_after_one_of_unknown_size_needs_its_offset():
    text = ('main[CoreML7]() {\n  block0() {\n    %a: (?, fp16) = const(val=(?, fp16)(blob), name="a")\n'
            '    %b: (2, fp16) = const(val=(2, fp16)(blob), name="b")\n  } -> (%a)\n}\n')
    with pytest.raises(miltext.ParseError) as e:
        miltext.loads(text)
    assert (e.value.line, e.value.column) == (4, 5) and "write the offset, blob(N)" in str(e.value)


# ---- the Llama example ----------------------------------------------------------------------------

def test_the_llama_example_builds_from_its_checkpoint(tmp_path):
    """examples/llama: its script makes a random checkpoint, and decoder.mil builds from it."""
    import importlib.util
    import shutil
    folder = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "llama")
    spec = importlib.util.spec_from_file_location("make_checkpoint", os.path.join(folder, "make_checkpoint.py"))
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    script.main(str(tmp_path))
    shutil.copy(os.path.join(folder, "decoder.mil"), tmp_path / "decoder.mil")
    assert run("check", "decoder.mil", cwd=tmp_path).returncode == 0
    result = run("build", "decoder.mil", "-o", "Decoder.mlpackage", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    prog = coremltools_program(str(tmp_path / "Decoder.mlpackage"))
    consts = {op.name: op.val.val for op in prog.functions["main"].find_ops(op_type="const")}
    tensors = script.weights()
    assert np.array_equal(consts["embed"], tensors["model.embed_tokens.weight"].astype(np.float16))
    assert np.array_equal(consts["l1_wd"], tensors["model.layers.1.mlp.down_proj.weight"].astype(np.float16))
    assert np.array_equal(consts["mask"], np.load(tmp_path / "causal_mask.npy"))
    output = prog.functions["main"].outputs[0]
    assert output.name == "logits" and output.shape == (1, script.SEQ, script.VOCAB)


def test_the_python_example_of_docs_weights_runs(tmp_path, monkeypatch):
    """docs/weights.md's Python block, run as it is."""
    doc = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "weights.md")
    with open(doc, encoding="utf-8") as f:
        code = re.search(r"```python\n(.*?)```", f.read(), re.S).group(1)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/weights.md", "exec"), {})
    assert (tmp_path / "MLP.mlpackage").is_dir() and (tmp_path / "more.bin").is_file()


def test_git_diff_of_a_rebuilt_package_shows_only_the_inserted_layer(repo):
    """End to end in a git repository: a model built from .npy weights, committed as a package,
    then rebuilt with a layer inserted: git diff (textconv) shows the layer, the one input that
    now reads it, and one more blob in weight.bin; nothing else moves."""
    assert run("git-setup", cwd=repo.path, env=repo.env).returncode == 0
    for name in [str(i) for i in range(6)] + ["extra"]:
        np.save(repo.path / f"w{name}.npy", RNG.standard_normal((8, 8)).astype(np.float16))
    for inserted in (False, True):
        (repo.path / "model.mil").write_text(layers(6, inserted))
        assert run("check", "model.mil", cwd=repo.path).returncode == 0
        result = run("build", "model.mil", "-o", "M.mlpackage", cwd=repo.path)
        assert result.returncode == 0, result.stderr
        repo("add", "-A")
        repo("commit", "-qm", "one more layer" if inserted else "six layers")
    diff = repo("diff", "HEAD~1", "--", "M.mlpackage")
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert len(changed) == 7, diff
    assert changed[0].startswith("+    %wextra: (8, 8, fp16) = const(val=(8, 8, fp16)(blob)")
    assert changed[1].startswith("+    %hextra: (1, 8, fp16) = linear(x=%h1, weight=%wextra")
    assert changed[2] == '-    %h2: (1, 8, fp16) = linear(x=%h1, weight=%w2, name="h2")'
    assert changed[3] == '+    %h2: (1, 8, fp16) = linear(x=%hextra, weight=%w2, name="h2")'
    assert changed[4].startswith("-# weight file: 6 blobs") and changed[5].startswith("+# weight file: 7 blobs")
    assert re.fullmatch(r"\+%wextra: \(8, 8, fp16\), 128 bytes, sha256:[0-9a-f]{8}", changed[6])   # named by its model
