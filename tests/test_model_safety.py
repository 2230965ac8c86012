"""Safety: a blob file that leads out of the model folder is refused; corrupt or truncated
inputs are one clear message and exit 1, never a traceback; and a failed command leaves no
half-written output behind (nor touches what was there)."""
import json
import os
import re

import pytest

from miltext.model import read_model
from model_cases import LARGEST, PACKAGES, assert_clean_failure, copy_package, leftovers, miltext as run, mlmodel_of, name_of, read, weights_of

TORCH_MLP = next(p for p in PACKAGES if name_of(p) == "torch_mlp")


def unpacked(tmp_path, package=TORCH_MLP):
    result = run("unpack", package, "dir", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    return tmp_path / "dir" / "model.mil"


@pytest.mark.parametrize("file_name,why", [
    ("@model_path/../secret.bin", "leads out of the model folder"),
    ("@model_path/weights/../../secret.bin", "leads out of the model folder"),
    ("@model_path//etc/passwd", "leads out of the model folder"),
    ("/etc/passwd", "is not in the model"),
    ("weights/weight.bin", "is not in the model"),
])
@pytest.mark.parametrize("command", [["pack", "dir", "-o", "out.mlpackage"], ["print", "--weight-digests", "dir/model.mil"],
                                     ["build", "dir/model.mil", "-o", "out.mlpackage"]])
def test_a_blob_file_outside_the_model_is_refused(file_name, why, command, tmp_path):
    (tmp_path / "secret.bin").write_bytes(read(weights_of(TORCH_MLP)))
    mil = unpacked(tmp_path)
    text = mil.read_text().replace("(blob)", f'(blob("{file_name}", 64))', 1)   # the first weight
    mil.write_text(text)
    result = run(*command, cwd=tmp_path)
    assert_clean_failure(result)
    assert file_name in result.stderr and why in result.stderr
    assert not (tmp_path / "out.mlpackage").exists() and leftovers(tmp_path) == []


def test_a_link_out_of_the_weights_folder_is_refused(tmp_path):
    unpacked(tmp_path)
    (tmp_path / "outside.bin").write_bytes(b"private")
    os.symlink(tmp_path / "outside.bin", tmp_path / "dir" / "weights" / "extra.bin")
    result = run("pack", "dir", "-o", "out.mlpackage", cwd=tmp_path)
    assert_clean_failure(result)
    assert "extra.bin is a link" in result.stderr and not (tmp_path / "out.mlpackage").exists()


def test_a_manifest_path_out_of_the_package_is_refused(tmp_path):
    package = copy_package(TORCH_MLP, tmp_path)
    manifest_path = os.path.join(package, "Manifest.json")
    manifest = json.loads(read(manifest_path))
    manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]["path"] = "../../model.mlmodel"
    with open(manifest_path, "w") as f:
        json.dump(manifest, f)
    result = run("print", package, cwd=tmp_path)
    assert_clean_failure(result)
    assert "leads out of the package" in result.stderr


def corrupt(how: str, package: str) -> None:
    model, manifest = mlmodel_of(package), os.path.join(package, "Manifest.json")
    if how == "truncated model":
        data = read(model)
        with open(model, "wb") as f:
            f.write(data[:len(data) // 2])
    elif how == "model that is no protobuf":
        with open(model, "wb") as f:
            f.write(b"\xff" * 100)
    elif how == "broken manifest":
        with open(manifest, "w") as f:
            f.write("{not json")
    elif how == "no manifest":
        os.remove(manifest)
    elif how == "no model file":
        os.remove(model)
    else:
        corrupt_weights(how, weights_of(package))


def corrupt_weights(how: str, weights: str) -> None:
    data = read(weights)
    if how == "truncated weights":
        data = data[:len(data) - 100]
    elif how == "bad sentinel":
        data = data[:64] + b"\0\0\0\0" + data[68:]
    os.remove(weights)
    if how != "no weights":
        with open(weights, "wb") as f:
            f.write(data)


CORRUPTIONS = {"truncated model": "not a Core ML model (truncated or corrupt protobuf)",
               "model that is no protobuf": "not a Core ML model",
               "truncated weights": "truncated: blob",
               "bad sentinel": "bad sentinel",
               "no weights": "weight file not found",
               "broken manifest": "Manifest.json: error: not valid JSON",
               "no manifest": "not a model package (no Manifest.json)",
               "no model file": "the model file Data/com.apple.CoreML/model.mlmodel is missing"}
WEIGHT_CORRUPTIONS = ["truncated weights", "bad sentinel", "no weights"]
PACK_CHECKS = {"truncated weights", "bad sentinel"}


@pytest.mark.parametrize("how", CORRUPTIONS)
def test_unpack_of_a_corrupt_package_is_one_clear_message_and_leaves_nothing(how, tmp_path):
    package = copy_package(LARGEST, tmp_path)
    corrupt(how, package)
    result = run("unpack", package, "dir", cwd=tmp_path)
    assert_clean_failure(result)
    assert CORRUPTIONS[how] in result.stderr, result.stderr
    assert not (tmp_path / "dir").exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("how", WEIGHT_CORRUPTIONS + ["broken text"])
def test_pack_of_a_corrupt_folder_is_one_clear_message_and_leaves_nothing(how, tmp_path):
    mil = unpacked(tmp_path, LARGEST)
    if how == "broken text":
        mil.write_text("model(specificationVersion=8 {\n")
    else:
        corrupt_weights(how, str(tmp_path / "dir" / "weights" / "weight.bin"))
    result = run("pack", "dir", "-o", "out.mlpackage", cwd=tmp_path)
    assert_clean_failure(result)
    if how == "broken text":
        assert result.stderr.startswith("dir/model.mil:1:")
    else:
        assert CORRUPTIONS[how] in result.stderr
        if how in PACK_CHECKS:    # found by the check pack runs first, at the blob's line
            assert re.match(r"dir/model.mil:\d+:\d+: error: ", result.stderr), result.stderr
    assert not (tmp_path / "out.mlpackage").exists() and leftovers(tmp_path) == []


@pytest.mark.parametrize("how", ["truncated model", "model that is no protobuf", "broken manifest"])
@pytest.mark.parametrize("command", [["print"], ["print", "--weight-digests"], ["diff", "x"], ["textconv"]])
def test_every_command_says_what_is_wrong_with_a_corrupt_package(how, command, tmp_path):
    package = copy_package(TORCH_MLP, tmp_path)
    corrupt(how, package)
    args = ["diff", package, TORCH_MLP] if command[0] == "diff" else [*command, package]
    result = run(*args, cwd=tmp_path)
    if command[0] == "textconv":      # git's textconv never fails: it says so in its text
        assert result.returncode == 0 and result.stdout.startswith("# miltext: not shown as MIL text (")
        assert "Traceback" not in result.stderr
        return
    assert_clean_failure(result, 2 if command[0] == "diff" else 1)
    assert CORRUPTIONS[how] in result.stderr


def test_a_failed_pack_leaves_an_existing_package_alone(tmp_path):
    package = copy_package(TORCH_MLP, tmp_path)
    before = {name: read(os.path.join(package, name)) for name in ("Manifest.json", "Data/com.apple.CoreML/model.mlmodel")}
    mil = unpacked(tmp_path)
    mil.write_text(mil.read_text().replace("= relu(x=%linear_0_cast_fp16", "= relu(x=%nowhere"))
    result = run("pack", "dir", "-o", package, cwd=tmp_path)
    assert_clean_failure(result)
    assert "%nowhere is not defined" in result.stderr
    assert {name: read(os.path.join(package, name)) for name in before} == before
    assert leftovers(tmp_path) == []


def test_reading_models_never_writes(tmp_path):
    package = copy_package(TORCH_MLP, tmp_path)
    before = sorted(os.listdir(tmp_path))
    read_model(package)
    run("print", package, cwd=tmp_path)
    assert sorted(os.listdir(tmp_path)) == before
