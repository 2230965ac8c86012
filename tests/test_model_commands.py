"""The model commands as a user runs them, on the corpus packages on disk: unpack and pack are
inverses, print shows any model file as text (with weight digests when asked), build makes a
package from hand-written text, fmt keeps black's contract, diff compares any two files."""
import hashlib
import os
import re
import shutil

import numpy as np
import pytest

import miltext
from miltext.model import pack, read_model, unpack
from miltext.model.text import model_text
from miltext.model.weights import WeightReader, replace_blob, write_weights
from model_cases import LARGEST, PACKAGES, assert_clean_failure, copy_package, coremltools_model, leftovers, miltext as run, mlmodel_of, name_of, read, weights_of

TORCH_MLP = next(p for p in PACKAGES if name_of(p) == "torch_mlp")
SOME = [p for p in PACKAGES if name_of(p) in ("torch_mlp", "torch_classifier_strings", "flex_rangedim_torch",
                                               "constexpr_ios18_lut")] + [LARGEST]


def blobs(path) -> list:
    with WeightReader(path) as reader:
        return [(b, reader.data(b.offset)) for b in reader.blobs()]


# ---- unpack and pack -------------------------------------------------------------------------

@pytest.mark.parametrize("package", PACKAGES, ids=name_of)
def test_pack_of_unpack_gives_the_same_model_and_blobs(package, tmp_path):
    folder, out = str(tmp_path / "model"), str(tmp_path / "out.mlpackage")
    unpack(package, folder)
    assert sorted(os.listdir(folder)) == ["model.mil", "weights"]
    assert read(os.path.join(folder, "weights", "weight.bin")) == read(weights_of(package))
    pack(folder, out)
    assert coremltools_model(read(mlmodel_of(out))) == coremltools_model(read(mlmodel_of(package)))
    assert blobs(weights_of(out)) == blobs(weights_of(package))


@pytest.mark.parametrize("package", SOME, ids=name_of)
def test_unpack_and_pack_commands(package, tmp_path):
    result = run("unpack", package, "dir", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "" and result.stderr == "", result.stderr
    text = (tmp_path / "dir" / "model.mil").read_text(encoding="utf-8")
    assert text == model_text(read_model(package))
    result = run("pack", "dir", "-o", "out.mlpackage", cwd=tmp_path)
    assert result.returncode == 0 and result.stdout == "" and result.stderr == "", result.stderr
    assert coremltools_model(read(mlmodel_of(tmp_path / "out.mlpackage"))) == coremltools_model(read(mlmodel_of(package)))
    assert read(weights_of(tmp_path / "out.mlpackage")) == read(weights_of(package))
    assert leftovers(tmp_path) == []


def test_model_path_is_the_folder_of_the_text(tmp_path):
    unpack(LARGEST, str(tmp_path / "a"))
    shutil.move(str(tmp_path / "a"), str(tmp_path / "moved"))   # the folder goes with its text
    pack(str(tmp_path / "moved" / "model.mil"), str(tmp_path / "out.mlpackage"))
    assert read(weights_of(tmp_path / "out.mlpackage")) == read(weights_of(LARGEST))


def test_unpack_again_replaces_an_earlier_unpack_but_nothing_else(tmp_path):
    folder = tmp_path / "dir"
    unpack(PACKAGES[0], str(folder))
    unpack(SOME[0], str(folder))                                 # an earlier unpack: replaced
    assert (folder / "model.mil").read_text(encoding="utf-8") == model_text(read_model(SOME[0]))
    before = (folder / "model.mil").read_bytes()
    result = run("unpack", SOME[1], "dir", cwd=tmp_path)                # the command asks first
    assert_clean_failure(result)
    assert "dir: error: not empty; unpack into a new or empty folder (--force replaces" in result.stderr
    assert (folder / "model.mil").read_bytes() == before
    assert run("unpack", "--force", SOME[1], "dir", cwd=tmp_path).returncode == 0
    assert (folder / "model.mil").read_text(encoding="utf-8") == model_text(read_model(SOME[1]))
    (folder / "notes.txt").write_text("mine")
    result = run("unpack", "--force", SOME[1], "dir", cwd=tmp_path)
    assert_clean_failure(result)
    assert "dir: error: holds notes.txt, which miltext does not write there" in result.stderr
    assert (folder / "notes.txt").read_text() == "mine"


def test_pack_of_a_folder_without_model_mil_says_so(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run("pack", "empty", "-o", "x.mlpackage", cwd=tmp_path)
    assert_clean_failure(result)
    assert "no model.mil in it" in result.stderr and not (tmp_path / "x.mlpackage").exists()


# ---- print -------------------------------------------------------------------------------------

@pytest.mark.parametrize("package", SOME, ids=name_of)
def test_print_shows_every_kind_of_file_as_the_same_text(package, tmp_path):
    folder = tmp_path / "dir"
    unpack(package, str(folder))
    text = (folder / "model.mil").read_text(encoding="utf-8")
    program_text = miltext.dumps(read_model(package).program)
    assert text.endswith(program_text)
    for path, expected in [(package, text), (mlmodel_of(package), text), (folder / "model.mil", text),
                           (package[:-len(".mlpackage")] + ".pb", program_text)]:
        result = run("print", path, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert result.stdout == expected


def test_weight_digests_stand_beside_each_reference(tmp_path):
    result = run("print", "--weight-digests", LARGEST, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    with WeightReader(weights_of(LARGEST)) as reader:   # a converted model: blobs in program order
        expected = [hashlib.sha256(reader.data(b.offset)).hexdigest()[:8] for b in reader.blobs()]
    found = re.findall(r"\(blob\).*  # sha256:([0-9a-f]{8})$", result.stdout, re.M)
    assert found == expected and len(found) == result.stdout.count("(blob")
    # The digests are comments: the text reads as the same model.
    plain = run("print", LARGEST, cwd=tmp_path).stdout
    assert model_text(miltext.model.text.parse_model(result.stdout)) == plain


def test_digest_of_a_changed_weight_changes(tmp_path):
    folder = tmp_path / "dir"
    unpack(LARGEST, str(folder))
    before = run("print", "--weight-digests", "dir/model.mil", cwd=tmp_path).stdout
    weight = folder / "weights" / "weight.bin"
    with WeightReader(weight) as reader:
        values = reader.read(64)
    replace_blob(weight, 64, values * 2 + 1)
    after = run("print", "--weight-digests", "dir/model.mil", cwd=tmp_path).stdout
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert len(changed) == 1 and changed[0][0].startswith("    %const_0_to_fp16:")  # the first blob


def test_print_of_a_weight_file_lists_its_blobs(tmp_path):
    result = run("print", weights_of(LARGEST), cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("# weight file: 20 blobs, ")
    assert result.stdout.count("\nblob: ") == 20


# ---- build ---------------------------------------------------------------------------------------

HAND_WRITTEN = """main[CoreML7](%x: (1, ?, 4, fp32),
              %n: (2, int32)) {
  block0() {
    %w: (4, 4, fp32) = const(val=(4, 4, fp32)(blob), name="w")
    %y: (1, ?, 4, fp32) = linear(x=%x, weight=%w, name="y")
    %z: (1, ?, 4, fp16) = cast(x=%y, dtype="fp16", name="z")
  } -> (%z, %n)
}
"""


def hand_written_model(tmp_path) -> str:
    """HAND_WRITTEN in tmp_path/model.mil, its weight in tmp_path/weights/weight.bin."""
    (tmp_path / "weights").mkdir()
    write_weights(tmp_path / "weights" / "weight.bin", [("fp32", np.eye(4, dtype=np.float32))])
    (tmp_path / "model.mil").write_text(HAND_WRITTEN, encoding="utf-8")
    return "model.mil"


def coremltools_loads(path: str):
    """Open the package as coremltools does, and load its program with coremltools' own MIL loader
    (skipped, saying so, where coremltools is not installed)."""
    ct = pytest.importorskip("coremltools")
    from coremltools.converters.mil.frontend.milproto.load import load_mil_proto
    model = ct.models.MLModel(path, skip_model_load=True)
    spec = model.get_spec()
    return spec, load_mil_proto(spec.mlProgram, spec.specificationVersion, model.weights_dir)


def test_build_of_hand_written_text_opens_in_coremltools(tmp_path):
    result = run("build", hand_written_model(tmp_path), "-o", "out.mlpackage", cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == "", result.stderr
    spec, prog = coremltools_loads(str(tmp_path / "out.mlpackage"))
    assert spec.specificationVersion == 8
    x, n = spec.description.input
    assert (x.name, list(x.type.multiArrayType.shape), x.type.multiArrayType.dataType) == ("x", [1, 1, 4], 65568)
    assert [(r.lowerBound, r.upperBound) for r in x.type.multiArrayType.shapeRange.sizeRanges] == [(1, 1), (1, 2), (4, 4)]
    assert (list(n.type.multiArrayType.shape), n.type.multiArrayType.dataType) == ([2], 131104)
    z, n_out = spec.description.output
    assert (z.name, list(z.type.multiArrayType.shape), z.type.multiArrayType.dataType) == ("z", [], 65552)
    assert {"linear", "cast"} <= {op.op_type for op in prog.functions["main"].operations}
    w = prog.functions["main"].find_ops(op_type="const")[0]
    assert w.val.val.tolist() == [[1.0 if i == j else 0.0 for j in range(4)] for i in range(4)]


@pytest.mark.parametrize("example", ["list_ops", "state", "while_loop"])
def test_build_of_the_examples_opens_in_coremltools(example, tmp_path):
    source = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", example + ".mil")
    result = run("build", source, "-o", "out.mlpackage", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    spec, prog = coremltools_loads(str(tmp_path / "out.mlpackage"))
    assert list(prog.functions) == ["main"]
    assert miltext.dumps(read_model(str(tmp_path / "out.mlpackage")).program) == miltext.dumps(miltext.load(source))


@pytest.mark.parametrize("package", [p for p in PACKAGES if name_of(p) not in (
    "flex_rangedim_torch", "torch_image_input", "torch_tiny_resnet_classifier",   # ranges, images: told by the user
    "const_dtype_zoo_ios17", "const_values_special", "sdpa_ios18")], ids=name_of)  # no description at all
def test_derived_description_is_the_one_coremltools_wrote(package, tmp_path):
    """Take the model section out of an unpacked corpus model and build it: the description
    miltext derives is the one coremltools derived (its metadata aside)."""
    folder = tmp_path / "dir"
    unpack(package, str(folder))
    text = (folder / "model.mil").read_text(encoding="utf-8")
    (folder / "model.mil").write_text(text[text.index("\n}\n") + 3:].lstrip("\n"), encoding="utf-8")
    result = run("build", "dir/model.mil", "-o", "out.mlpackage", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    theirs = coremltools_model(read(mlmodel_of(package)))
    theirs.description.ClearField("metadata")
    assert coremltools_model(read(mlmodel_of(tmp_path / "out.mlpackage"))) == theirs


def test_build_of_a_multifunction_program_describes_each_function(tmp_path):
    # the second function shares the weight: its offset is not the next one, so it is written
    text = HAND_WRITTEN + "\n" + HAND_WRITTEN.replace("main[CoreML7]", "other[CoreML7]").replace("(blob)", "(blob(64))")
    hand_written_model(tmp_path)
    (tmp_path / "model.mil").write_text(text, encoding="utf-8")
    result = run("build", "model.mil", "-o", "out.mlpackage", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    spec, prog = coremltools_loads(str(tmp_path / "out.mlpackage"))
    assert spec.specificationVersion == 9 and spec.description.defaultFunctionName == "main"
    assert [f.name for f in spec.description.functions] == ["main", "other"]
    assert sorted(prog.functions) == ["main", "other"]


def test_build_of_a_bool_input_says_why(tmp_path):
    (tmp_path / "m.mil").write_text(HAND_WRITTEN.replace("%n: (2, int32)", "%n: (2, bool)"), encoding="utf-8")
    result = run("build", "m.mil", "-o", "out.mlpackage", cwd=tmp_path)
    assert_clean_failure(result)
    assert result.stderr.startswith("m.mil:2:15: error: input %n is bool: a model's arrays are fp32, fp16, int32 or int8")
    assert not (tmp_path / "out.mlpackage").exists() and leftovers(tmp_path) == []


def test_build_of_an_mlmodel_needs_no_weights(tmp_path):
    result = run("build", hand_written_model(tmp_path), "-o", "out.mlmodel", cwd=tmp_path)
    assert_clean_failure(result)
    assert "cannot carry weight files" in result.stderr
    inline = "(4, 4, fp32)(" + str(np.eye(4).tolist()) + ")"
    (tmp_path / "plain.mil").write_text(HAND_WRITTEN.replace("(4, 4, fp32)(blob)", inline), encoding="utf-8")
    result = run("build", "plain.mil", "-o", "out.mlmodel", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert coremltools_model(read(tmp_path / "out.mlmodel")).description.input[0].name == "x"


def test_build_checks_each_blob_against_its_type(tmp_path):
    hand_written_model(tmp_path)
    (tmp_path / "model.mil").write_text(HAND_WRITTEN.replace("(4, 4, fp32)(blob)", "(4, 4, fp16)(blob)"))
    result = run("build", "model.mil", "-o", "out.mlpackage", cwd=tmp_path)
    assert_clean_failure(result)
    assert result.stderr.startswith("model.mil:4:30: error: the blob at offset 64 holds fp32 data, "
                                    "but the value is (4, 4, fp16)\n")
    assert not (tmp_path / "out.mlpackage").exists() and leftovers(tmp_path) == []
    result = run("build", "--no-verify", "model.mil", "-o", "out.mlpackage", cwd=tmp_path)
    assert_clean_failure(result)    # unchecked, the blob is still checked as it is copied
    assert result.stderr.startswith("model.mil:4:5: error: ") and "blob 64 holds fp32, not fp16" in result.stderr
    assert not (tmp_path / "out.mlpackage").exists() and leftovers(tmp_path) == []


# ---- fmt ---------------------------------------------------------------------------------------

UGLY = HAND_WRITTEN.replace("  block0() {", "  block7()   {").replace(", name=", ",name=")


def test_fmt_rewrites_in_place_and_check_then_passes(tmp_path):
    (tmp_path / "a.mil").write_text(UGLY, encoding="utf-8")
    os.chmod(tmp_path / "a.mil", 0o640)
    result = run("fmt", "--check", "a.mil", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (1, "") and "would reformat a.mil" in result.stderr
    assert (tmp_path / "a.mil").read_text() == UGLY
    result = run("fmt", "a.mil", cwd=tmp_path)
    assert result.returncode == 0 and "reformatted a.mil" in result.stderr
    assert (tmp_path / "a.mil").read_text() == HAND_WRITTEN
    assert os.stat(tmp_path / "a.mil").st_mode & 0o777 == 0o640 and leftovers(tmp_path) == []
    result = run("fmt", "--check", "a.mil", cwd=tmp_path)
    assert result.returncode == 0 and "1 file left unchanged" in result.stderr


def test_fmt_diff_shows_the_change_and_writes_nothing(tmp_path):
    (tmp_path / "a.mil").write_text(UGLY, encoding="utf-8")
    result = run("fmt", "--diff", "a.mil", cwd=tmp_path)
    assert result.returncode == 0
    assert "\n-  block7()   {\n" in result.stdout and "\n+  block0() {\n" in result.stdout
    assert result.stdout.startswith("--- a.mil (original)\n+++ a.mil (formatted)\n")
    assert (tmp_path / "a.mil").read_text() == UGLY
    assert run("fmt", "--check", "--diff", "a.mil", cwd=tmp_path).returncode == 1


def test_fmt_leaves_a_file_that_does_not_parse_and_says_where(tmp_path):
    bad = HAND_WRITTEN.replace("cast(x=%y", "cast(x=$y")
    (tmp_path / "bad.mil").write_text(bad, encoding="utf-8")
    (tmp_path / "good.mil").write_text(UGLY, encoding="utf-8")
    result = run("fmt", "bad.mil", "good.mil", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "bad.mil:6:34: error: " in result.stderr
    assert (tmp_path / "bad.mil").read_text() == bad
    assert (tmp_path / "good.mil").read_text() == HAND_WRITTEN     # the others are still done


def test_fmt_of_folders_and_model_sections(tmp_path):
    for package in (TORCH_MLP, LARGEST):
        unpack(package, str(tmp_path / "models" / name_of(package)))
    assert run("fmt", "--check", "models", cwd=tmp_path).returncode == 0   # unpack writes canonical text
    path = tmp_path / "models" / name_of(TORCH_MLP) / "model.mil"
    text = path.read_text()
    path.write_text(text.replace("model(specificationVersion=8) {", "model( specificationVersion = 8 ){"))
    result = run("fmt", "models", cwd=tmp_path)
    assert result.returncode == 0 and "1 file reformatted, 1 file left unchanged" in result.stderr
    assert path.read_text() == text


def test_fmt_of_stdin(tmp_path):
    result = run("fmt", "-", cwd=tmp_path, input=UGLY)
    assert result.returncode == 0 and result.stdout == HAND_WRITTEN
    assert result.stderr == ""  # Vim's `:%!miltext fmt -` puts stderr into the buffer too


# ---- diff --------------------------------------------------------------------------------------

def test_diff_of_the_same_model_in_any_two_files_is_empty(tmp_path):
    package = TORCH_MLP
    unpack(package, str(tmp_path / "dir"))
    for a, b in [(package, "dir/model.mil"), (mlmodel_of(package), package), ("dir/model.mil", package)]:
        result = run("diff", a, b, cwd=tmp_path)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_diff_shows_a_changed_op_and_a_changed_weight(tmp_path):
    copy = copy_package(TORCH_MLP, tmp_path)
    unpack(copy, str(tmp_path / "dir"))
    text = (tmp_path / "dir" / "model.mil").read_text()
    (tmp_path / "dir" / "model.mil").write_text(text.replace("= relu(", "= sigmoid("))
    weight = tmp_path / "dir" / "weights" / "weight.bin"
    with WeightReader(weight) as reader:
        replace_blob(weight, 640, reader.read(640) + 1)
    pack(str(tmp_path / "dir"), str(tmp_path / "new.mlpackage"))
    result = run("diff", copy, "new.mlpackage", cwd=tmp_path)
    assert result.returncode == 1 and result.stderr == ""
    summary = [line for line in result.stdout.splitlines() if line.startswith("# ")]
    assert summary == ["# 2 ops changed (const, sigmoid)",   # by structure: the const named, in numbers
                       "# weight %var_0_bias_to_fp16 (32, fp16) changed: 32 of 32 elements, max abs difference 1.00049"]
    removed = [line for line in result.stdout.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line for line in result.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert len(removed) == len(added) == 2
    assert removed[0][1:].split("  # ")[0] == added[0][1:].split("  # ")[0] and removed[0] != added[0]  # a digest
    assert "(blob)" in removed[0]
    assert "relu(" in removed[1] and "sigmoid(" in added[1]
    unread = run("diff", "--no-weight-digests", copy, "new.mlpackage", cwd=tmp_path)   # weights unread: the op only
    assert unread.returncode == 1 and "sha256" not in unread.stdout and "# 1 op changed (sigmoid)" in unread.stdout
    text = run("diff", "--text", copy, "new.mlpackage", cwd=tmp_path)
    assert text.returncode == 1 and "# sha256:" in text.stdout and "changed:" not in text.stdout


def test_diff_of_a_program_and_its_model(tmp_path):
    package = TORCH_MLP
    result = run("diff", package[:-len(".mlpackage")] + ".pb", package, cwd=tmp_path)
    assert result.returncode == 1
    assert "+model(specificationVersion=8) {" in result.stdout


def test_diff_of_an_unreadable_file_exits_2(tmp_path):
    (tmp_path / "broken.pb").write_bytes(b"\x0a\xff")
    result = run("diff", "broken.pb", SOME[0], cwd=tmp_path)
    assert_clean_failure(result, 2)
    assert "broken.pb" in result.stderr


def test_fmt_keeps_comments_unless_told(tmp_path):
    commented = UGLY.replace("  block7()   {", "  block7()   {  # the weights are identity")
    (tmp_path / "c.mil").write_text(commented, encoding="utf-8")
    result = run("fmt", "c.mil", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "c.mil").read_text() == HAND_WRITTEN.replace("  block0() {", "  block0() {  # the weights are identity")
    assert run("fmt", "--drop-comments", "c.mil", cwd=tmp_path).returncode == 0
    assert (tmp_path / "c.mil").read_text() == HAND_WRITTEN
    (tmp_path / "d.mil").write_text(HAND_WRITTEN.replace('name="y")', 'name="y#1")  # fine as it is'))
    assert run("fmt", "--check", "d.mil", cwd=tmp_path).returncode == 0   # a # in a string is not a comment


def test_fmt_keeps_apples_dialect_in_its_dialect(tmp_path):
    program = miltext.loads(HAND_WRITTEN.replace("(4, 4, fp32)(blob)", "(4, 4, fp32)(b64\"" + "A" * 86 + "==\")"))
    text = miltext.dumps(program, "modelmil")
    (tmp_path / "model.mil").write_text(text.replace("\n", "\n\n", 3), encoding="utf-8")
    result = run("fmt", "model.mil", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "model.mil").read_text() == text


def test_derived_description_of_scalars_states_and_unknown_sizes():
    from miltext.model.derive import DescriptionError, derived_spec
    program = miltext.loads("""main[CoreML8](%s: (fp32),
              %kv: (2, 3, fp16)(State),
              %x: (?, 3, int32)) {
  block0() {
  } -> (%s, %x)
}
""")
    desc = derived_spec(program).description
    assert [f.name for f in desc.input] == ["s", "x"] and [f.name for f in desc.state] == ["kv"]
    assert list(desc.input[0].type.multiArrayType.shape) == [1]          # a scalar is an array of one
    assert list(desc.state[0].type.stateType.arrayType.shape) == [2, 3]
    assert [(r.lowerBound, r.upperBound) for r in desc.input[1].type.multiArrayType.shapeRange.sizeRanges] == [(1, 2), (3, 3)]
    assert list(desc.output[0].type.multiArrayType.shape) == []          # scalar outputs give no shape
    assert derived_spec(program).specificationVersion == 9
    with pytest.raises(DescriptionError, match="input %x has a variadic size"):
        derived_spec(miltext.loads("main[CoreML7](%x: (*, fp32)) {\n  block0() {\n  } -> (%x)\n}\n"))
