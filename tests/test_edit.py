"""`miltext edit` and miltext.edit (issue 32): edits made to the program and the model section
of real conversions (tests/corpus/conversions, built into packages), nested blocks included.
Each round trip (`edit` then `print`) changes exactly the lines of the edit; edited packages
load in coremltools' MIL loader; bad edits are refused with nothing written."""
import difflib
import os
import re
import shutil

import numpy as np
import pytest

from miltext import edit
from miltext.cli import main
from miltext.model import read_model, write_model
from miltext.model.blobs import Weights
from miltext.model.file_text import file_text
from support.corpus import CORPUS
from support.texts import NESTED

CONVERSIONS = os.path.join(CORPUS, "conversions")


def package(tmp_path, name: str, text=lambda text: text) -> str:
    """The conversion `name` (its text changed by `text`) built into a package, its model section
    derived as build derives it."""
    folder = tmp_path / name
    (folder / "weights").mkdir(parents=True)
    with open(os.path.join(CONVERSIONS, name + ".pb"), "rb") as f:
        (folder / "model.mil").write_text(text(file_text_of_program(f.read())))
    shutil.copy(os.path.join(CONVERSIONS, name + ".weight.bin"), folder / "weights" / "weight.bin")
    return build(folder / "model.mil", tmp_path / f"{name}.mlpackage")


def file_text_of_program(data: bytes) -> str:
    import miltext
    return miltext.dumps(miltext.Program.from_proto(data))


def build(source, output) -> str:
    assert main(["build", str(source), "-o", str(output)]) == 0
    return str(output)


def nested(tmp_path) -> str:
    (tmp_path / "nested.mil").write_text(NESTED)
    return build(tmp_path / "nested.mil", tmp_path / "nested.mlpackage")


def run_edit(model: str, out: str, *flags) -> int:
    return main(["edit", model, "-o", out, *flags])


def edited_package(tmp_path, model: str, *flags) -> tuple[str, str]:
    """The model's text before, and the package `edit model -o out.mlpackage *flags` writes."""
    before = file_text(model)
    out = str(tmp_path / "out.mlpackage")
    assert run_edit(model, out, *flags) == 0
    return before, out


def changed(old: str, new: str) -> tuple[list, list]:
    """The lines removed from `old` and those added in `new`, line by line."""
    removed, added = [], []
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def renamed(text: str, old: str, new: str) -> str:
    return re.sub(rf"%{old}(?![\w.])", f"%{new}", text)


def coremltools_program(path: str):
    """The package as coremltools' milproto loader reads it (a pymil Program)."""
    ct = pytest.importorskip("coremltools", reason="coremltools' MIL loader checks the edited package")
    from coremltools.converters.mil.frontend.milproto.load import load
    model = ct.models.MLModel(path, skip_model_load=True)
    spec = model.get_spec()
    return spec, load(spec, specification_version=spec.specificationVersion, file_weights_dir=model.weights_dir)


# ---- round trips on the conversions ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["gpt2", "gpt2_palettized", "bert"])
def test_rename_input_changes_exactly_the_lines_naming_it(name, tmp_path, capsys):
    model = package(tmp_path, name)
    before, out = edited_package(tmp_path, model, "--rename-input", "ids=tokens")
    after = file_text(out)
    assert after == renamed(before, "ids", "tokens")
    removed, added = changed(before, after)
    assert removed == [line for line in before.splitlines() if re.search(r"%ids(?![\w.])", line)]
    assert len(added) == len(removed) >= 3     # the model section, the signature, the uses
    assert "%ids → %tokens" in capsys.readouterr().out   # the diff of what changed
    spec, program = coremltools_program(out)
    assert [f.name for f in spec.description.input] == ["tokens"]
    assert list(program.functions["main"].inputs) == ["tokens"]


def test_rename_output_and_expose_change_exactly_those_lines(tmp_path):
    model = package(tmp_path, "gpt2_int4_blockwise")
    before, out = edited_package(tmp_path, model, "--expose", "var_235_cast_fp16", "--rename-output", "logits=scores")
    after = file_text(out)
    removed, added = changed(renamed(before, "logits", "scores"), after)
    assert removed == ["  } -> (%scores)"]
    assert added == ["  output %var_235_cast_fp16: (..., fp16)", "  } -> (%scores, %var_235_cast_fp16)"]
    removed, _ = changed(before, after)
    assert removed == [line for line in before.splitlines() if "%logits" in line]
    spec, program = coremltools_program(out)
    assert [f.name for f in spec.description.output] == ["scores", "var_235_cast_fp16"]
    assert [v.name for v in program.functions["main"].outputs] == ["scores", "var_235_cast_fp16"]


def test_remove_output_changes_its_feature_and_the_block_outputs(tmp_path):
    model = package(tmp_path, "bert")
    before, out = edited_package(tmp_path, model, "--remove-output", "pooled")
    removed, added = changed(before, file_text(out))
    assert removed == [line for line in before.splitlines() if line.startswith("  output %pooled")] + \
        ["  } -> (%hidden, %pooled)"]
    assert added == ["  } -> (%hidden)"]
    spec, _ = coremltools_program(out)
    assert [f.name for f in spec.description.output] == ["hidden"]


def test_replace_op_changes_one_line_and_keeps_the_inputs_the_new_op_takes(tmp_path):
    model = package(tmp_path, "resnet")
    before, out = edited_package(tmp_path, model, "--replace-op", "input_13_cast_fp16=sigmoid")
    removed, added = changed(before, file_text(out))
    assert len(removed) == len(added) == 1 and "= relu(x=%input_11_cast_fp16" in removed[0]
    assert added == [removed[0].replace("= relu(", "= sigmoid(")]
    _, program = coremltools_program(out)
    assert "sigmoid" in {op.op_type for op in program.functions["main"].operations}


def test_replace_op_names_the_inputs_the_old_op_lacks(tmp_path, capsys):
    model = package(tmp_path, "resnet")
    out = tmp_path / "out.mlpackage"
    assert run_edit(model, str(out), "--replace-op", "input_13_cast_fp16=clip") == 1
    err = capsys.readouterr().err
    assert "clip needs input 'alpha' and input 'beta', which relu %input_13_cast_fp16 does not give" in err
    assert not out.exists()


def test_set_weight_changes_the_const_line_and_its_values(tmp_path):
    model = package(tmp_path, "gpt2")
    before = file_text(model)
    values = np.linspace(-1, 1, 64, dtype=np.float32)     # fp32 for an fp16 const: cast, as npy(from=) does
    np.save(tmp_path / "bias.npy", values)
    out = str(tmp_path / "out.mlpackage")
    assert run_edit(model, out, "--set-weight", f"var_237_bias_0_to_fp16={tmp_path / 'bias.npy'}") == 0
    removed, added = changed(before, file_text(out))
    assert len(removed) == len(added) == 1 and removed[0].startswith("    %var_237_bias_0_to_fp16: (64, fp16) = const(")
    edited = read_model(out)
    op = next(op for op in edited.program.functions["main"].block.operations
              if op.outputs[0].name == "var_237_bias_0_to_fp16")
    with Weights(edited.folder) as weights:
        assert np.array_equal(weights.blob_array(op.attributes["val"]), values.astype(np.float16))
    coremltools_program(out)


def test_set_weight_checks_shape_and_dtype(tmp_path, capsys):
    model = package(tmp_path, "gpt2")
    np.save(tmp_path / "short.npy", np.zeros(63, np.float16))
    np.save(tmp_path / "ints.npy", np.zeros(64, np.int32))
    out = tmp_path / "out.mlpackage"
    assert run_edit(model, str(out), "--set-weight", f"var_237_bias_0_to_fp16={tmp_path / 'short.npy'}") == 1
    assert "has shape (63,), but the type says (64,)" in capsys.readouterr().err
    assert run_edit(model, str(out), "--set-weight", f"var_237_bias_0_to_fp16={tmp_path / 'ints.npy'}") == 1
    assert "holds int32, but the type says fp16" in capsys.readouterr().err
    assert not out.exists()


def test_extract_keeps_the_ops_that_compute_to_from_from(tmp_path):
    model = package(tmp_path, "gpt2")
    before, out = edited_package(tmp_path, model, "--extract", "input_cast_fp16:logits")
    after = file_text(out)
    edited = read_model(out)
    fn = edited.program.functions["main"]
    assert [v.name for v in fn.inputs] == ["input_cast_fp16"] and fn.block.outputs == ["logits"]
    # ops kept as they were (a blob's offset is written where it no longer follows from the one before)
    def lines(text):
        return {re.sub(r"\(blob\(\d+\)\)", "(blob)", line) for line in text.splitlines() if line.startswith("    %")}
    assert lines(after) and lines(after) <= lines(before)
    assert [op.type for op in fn.block.operations if op.type != "const"] == ["layer_norm", "linear"]
    spec, program = coremltools_program(out)
    assert [f.name for f in spec.description.input] == ["input_cast_fp16"]
    assert list(program.functions["main"].inputs) == ["input_cast_fp16"]


def test_extract_names_an_input_it_needs_beyond_from(tmp_path, capsys):
    model = package(tmp_path, "gpt2")
    out = tmp_path / "out.mlpackage"
    assert run_edit(model, str(out), "--extract", "var_235_cast_fp16:var_33_cast_fp16_cast_uint16") == 1
    assert "needs %ids, an input of function main that is not among FROM" in capsys.readouterr().err
    assert not out.exists()


def test_a_multifunction_model_is_renamed_in_each_function_and_its_description(tmp_path):
    # `main` is the default function of a derived description
    model = package(tmp_path, "llama_multifunction", lambda text: text.replace("decode[CoreML8]", "main[CoreML8]"))
    before, out = edited_package(tmp_path, model, "--rename-input", "causal_mask=mask")
    after = file_text(out)
    assert after == renamed(before, "causal_mask", "mask")
    spec = read_model(out).spec
    assert [[f.name for f in fd.input] for fd in spec.description.functions] == [["ids", "mask"]] * 2
    coremltools_program(out)


# ---- nested blocks --------------------------------------------------------------------------------

def test_renaming_an_input_renames_it_inside_cond_and_while_loop_blocks(tmp_path):
    """The case coremltools' rename_feature gets wrong: the input is read inside the blocks."""
    model = nested(tmp_path)
    before, out = edited_package(tmp_path, model, "--rename-input", "x=features", "--rename-var", "i=step")
    after = file_text(out)
    assert after == renamed(renamed(before, "x", "features"), "i", "step")
    assert "mul(x=%features," in after and "relu(x=%features," in after and "add(x=%acc, y=%features," in after
    assert "block4(%step: (int32)" in after and "%x" not in after
    spec, program = coremltools_program(out)
    assert [f.name for f in spec.description.input] == ["features", "pred"]
    inner = [op for op in program.functions["main"].operations if op.op_type == "cond"][0].blocks[1]
    assert [v.name for op in inner.operations for v in op.inputs.values()] == ["features"]


def test_exposing_a_var_inside_a_block_says_why_not(tmp_path, capsys):
    model = nested(tmp_path)
    out = tmp_path / "out.mlpackage"
    assert run_edit(model, str(out), "--expose", "relu_0") == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{model}: error: --expose relu_0: %relu_0 is defined inside a block of cond %cond_0")
    assert "a block's vars exist only while the block runs" in err and "%cond_0 can" in err
    assert not out.exists()


def test_replace_op_inside_a_block(tmp_path):
    model = nested(tmp_path)
    before, out = edited_package(tmp_path, model, "--replace-op", "relu_0=sigmoid")
    assert changed(before, file_text(out)) == (['        %relu_0: (1, 2, fp32) = relu(x=%x, name="relu_0")'],
                                               ['        %relu_0: (1, 2, fp32) = sigmoid(x=%x, name="relu_0")'])


# ---- bad input ------------------------------------------------------------------------------------

def test_a_misspelt_var_gets_did_you_mean(tmp_path, capsys):
    model = package(tmp_path, "gpt2")
    out = tmp_path / "out.mlpackage"
    assert run_edit(model, str(out), "--expose", "var_235_cast_fp61") == 1
    assert capsys.readouterr().err == (f"{model}: error: --expose var_235_cast_fp61: no var %var_235_cast_fp61 "
                                       "in function main; did you mean %var_235_cast_fp16?\n")
    assert run_edit(model, str(out), "--rename-input", "idz=tokens") == 1
    assert "did you mean %ids?" in capsys.readouterr().err
    assert run_edit(model, str(out), "--replace-op", "logits=lineer") == 1
    assert "did you mean 'linear'?" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("flags, why", [
    (["--expose", "var_235_cast_fp16", "--remove-output", "var_235_cast_fp16"], "one adds output"),
    (["--rename-var", "logits=a", "--rename-output", "logits=b"], "both rename %logits"),
    (["--rename-input", "ids=x", "--rename-var", "logits=x"], "both name a var %x"),
    (["--set-weight", "var_237_bias_0_to_fp16=w.npy", "--replace-op", "var_237_bias_0_to_fp16=relu"], "--set-weight gives"),
])
def test_conflicting_edits_are_refused_and_the_output_survives(flags, why, tmp_path, capsys):
    model = package(tmp_path, "gpt2")
    out = tmp_path / "out.mlmodel"
    out.write_bytes(b"the user's own bytes")
    assert run_edit(model, str(out), *flags) == 1
    err = capsys.readouterr().err
    assert "conflict: " + why in err or (" conflict: " in err and why in err)
    assert out.read_bytes() == b"the user's own bytes"


def test_an_edit_that_verification_refuses_writes_nothing(tmp_path, capsys):
    model = nested(tmp_path)
    out = tmp_path / "out.mlpackage"
    assert run_edit(model, str(out), "--replace-op", "squeeze_0=softmax") == 1
    err = capsys.readouterr().err
    assert "softmax takes fp16 or fp32 there" in err and "nothing written" in err
    assert not out.exists()


def test_edit_refuses_its_own_input_as_output(tmp_path, capsys):
    model = nested(tmp_path)
    listing = sorted(os.listdir(model))
    assert run_edit(model, model, "--rename-input", "x=y") == 1
    assert "is the input of this command" in capsys.readouterr().err
    assert sorted(os.listdir(model)) == listing


def test_no_edit_is_a_command_line_error(tmp_path, capsys):
    assert run_edit(nested(tmp_path), str(tmp_path / "o.mlpackage")) == 2
    assert "no edit given" in capsys.readouterr().err


# ---- the Python API --------------------------------------------------------------------------------

def test_the_python_api_edits_a_model_in_place(tmp_path):
    model = read_model(nested(tmp_path))
    edit.apply(model, [edit.parse("rename-input", "%x=features"), edit.parse("expose", "count")])
    assert [v.name for v in model.program.functions["main"].inputs] == ["features", "pred"]
    assert [f.name for f in model.spec.description.output] == ["total", "count"]
    write_model(model, str(tmp_path / "api.mlpackage"))
    assert "output %count: (..., int32)" in file_text(str(tmp_path / "api.mlpackage"))
    with pytest.raises(edit.EditError, match="did you mean %features"):
        edit.apply(model, [edit.parse("expose", "featurez")])
