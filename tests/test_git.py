"""git shows models as MIL text once `miltext git-setup` ran: the end-to-end story in a
temporary repository (commit a .mlpackage, change one op and one weight with miltext, commit
again, `git diff HEAD~1` shows both), textconv never failing, and the pre-commit hook."""
import os
import subprocess

import pytest

from miltext.model import pack, unpack
from miltext.model.weights import WeightReader, replace_blob
from model_cases import PACKAGES, copy_package, miltext as run, name_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_MLP = next(p for p in PACKAGES if name_of(p) == "torch_mlp")


def test_git_diff_shows_a_changed_op_and_a_changed_weight(repo, tmp_path):
    result = run("git-setup", cwd=repo.path, env=repo.env)
    assert result.returncode == 0, result.stderr
    package = copy_package(TORCH_MLP, repo.path)
    repo("add", "-A")
    repo("commit", "-qm", "the model")

    work = str(tmp_path / "work")
    unpack(package, work)                                        # change one op ...
    mil = os.path.join(work, "model.mil")
    with open(mil) as f:
        text = f.read()
    with open(mil, "w") as f:
        f.write(text.replace("= relu(x=%linear_0_cast_fp16", "= sigmoid(x=%linear_0_cast_fp16"))
    weight = os.path.join(work, "weights", "weight.bin")        # ... and one weight
    with WeightReader(weight) as reader:
        bias = reader.read(640)
        old_digest = reader.digest(640)
    replace_blob(weight, 640, bias + 1)
    with WeightReader(weight) as reader:
        new_digest = reader.digest(640)
    pack(work, package)
    repo("add", "-A")
    repo("commit", "-qm", "sigmoid, and a new bias")

    diff = repo("diff", "HEAD~1")
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert changed == [
        '-    %input_5_cast_fp16: (2, 32, fp16) = relu(x=%linear_0_cast_fp16, name="input_5_cast_fp16")',
        '+    %input_5_cast_fp16: (2, 32, fp16) = sigmoid(x=%linear_0_cast_fp16, name="input_5_cast_fp16")',
        f"-%var_0_bias_to_fp16: (32, fp16), 64 bytes, sha256:{old_digest}",    # named by the model of each side
        f"+%var_0_bias_to_fp16: (32, fp16), 64 bytes, sha256:{new_digest}"]
    assert "Manifest.json" not in diff                           # packing again kept its identifiers
    log = repo("log", "-p", "-1")
    assert "+    %input_5_cast_fp16: (2, 32, fp16) = sigmoid(" in log
    first = repo("show", "HEAD~1", "--", os.path.join(os.path.basename(package), "Data", "com.apple.CoreML", "model.mlmodel"))
    assert "+model(specificationVersion=8) {" in first and "+main[CoreML7](%x: (2, 8, fp16)) {" in first


def test_git_setup_writes_the_driver_and_attributes_once(repo):
    for _ in range(2):
        result = run("git-setup", cwd=repo.path, env=repo.env)
        assert result.returncode == 0, result.stderr
    with open(repo.path / ".gitattributes") as f:
        lines = f.read().splitlines()
    assert lines[1:] == ["*.mlmodel diff=miltext", "*.pb diff=miltext", "weight.bin diff=miltext",
                         "*.npy diff=miltext", "*.safetensors diff=miltext",
                         "**/*.aimodel/main.mlirb diff=miltext"]
    assert repo("config", "diff.miltext.textconv").strip().endswith("-m miltext.cli textconv --")
    assert repo("config", "diff.miltext.cachetextconv").strip() == "true"
    assert repo("check-attr", "diff", "m.mlpackage/Data/com.apple.CoreML/model.mlmodel").strip().endswith("diff: miltext")


def test_git_setup_global(repo):
    result = run("git-setup", "--global", cwd=repo.path, env=repo.env)
    assert result.returncode == 0, result.stderr
    attributes = os.path.join(repo.env["XDG_CONFIG_HOME"], "git", "attributes")
    with open(attributes) as f:
        assert "*.pb diff=miltext" in f.read()
    assert repo("config", "--global", "diff.miltext.cachetextconv").strip() == "true"
    assert not (repo.path / ".gitattributes").exists()


def test_git_setup_outside_a_repository_says_so(tmp_path):
    result = run("git-setup", cwd=tmp_path, env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path.parent)})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "not in a git repository" in result.stderr


def test_pb_that_is_no_mil_program_still_diffs(repo):
    run("git-setup", cwd=repo.path, env=repo.env)
    (repo.path / "graph.pb").write_bytes(b"\x0a\x05hello\xff")  # a protobuf of some other kind
    repo("add", "-A")
    repo("commit", "-qm", "one")
    (repo.path / "graph.pb").write_bytes(b"\x0a\x05world\xff")
    diff = repo("diff")
    assert " # miltext: not shown as MIL text (not a MIL Program protobuf" in diff
    assert "+# 8 bytes, sha256:" in diff and "fatal" not in diff


def test_pre_commit_hooks_offer_fmt():
    with open(os.path.join(ROOT, ".pre-commit-hooks.yaml")) as f:
        text = f.read()
    hooks = _hooks(text)
    assert hooks["miltext-fmt"]["entry"] == "miltext fmt" and hooks["miltext-fmt"]["files"] == r"\.mil$"
    assert hooks["miltext-fmt-check"]["entry"] == "miltext fmt --check --diff"
    assert all(h["language"] == "python" for h in hooks.values())


def _hooks(text: str) -> dict:
    """The hooks of a .pre-commit-hooks.yaml (a list of flat mappings: no YAML library needed)."""
    hooks, current = {}, None
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, _, value = line.lstrip("- ").partition(":")
        if line.startswith("- "):
            current = {}
        current[key.strip()] = value.strip()
        if key.strip() == "id":
            hooks[value.strip()] = current
    return hooks


# ---- the structural diff as git's external diff driver -----------------------------------------

REVIEW = os.path.join(ROOT, "tests", "review")


def _commit_model(repo, source, message):
    """`source` as model.mlpackage in the repository, committed."""
    import shutil
    target = repo.path / "model.mlpackage"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    repo("add", "-A")
    repo("commit", "-qm", message)
    return str(target)


def _summary(diff: str) -> list:
    return [line for line in diff.splitlines() if line.startswith("# ")]


def test_git_diff_of_a_reconverted_model_with_a_layer_inserted(repo):
    result = run("git-setup", "--structural", cwd=repo.path, env=repo.env)
    assert result.returncode == 0, result.stderr
    _commit_model(repo, os.path.join(REVIEW, "mlp6.mlpackage"), "six layers")
    _commit_model(repo, os.path.join(REVIEW, "mlp7.mlpackage"), "a layer inserted")

    direct = run("diff", os.path.join(REVIEW, "mlp6.mlpackage"), os.path.join(REVIEW, "mlp7.mlpackage"), cwd=repo.path)
    assert direct.returncode == 1, direct.stderr
    summary = _summary(direct.stdout)
    assert summary[0] == "# 4 ops added (2 const, linear, relu), 1 op changed (linear)"
    assert summary[1].startswith("# 10 renamed: ") and "%linear_[3-4]_cast_fp16 → %linear_[4-5]_cast_fp16" in summary[1]
    added = [line for line in direct.stdout.splitlines() if line.startswith("+") and not line.startswith("+++")]
    assert [line.split("= ")[1].split("(")[0] for line in added] == ["const", "const", "linear", "relu", "linear"]

    diff = repo("diff", "HEAD~1")
    model = diff[diff.index("diff --miltext a/model.mlpackage/Data/com.apple.CoreML/model.mlmodel"):]
    assert _summary(model)[:2] == summary[:2]                    # the same change, read from git's copies
    assert "+++ b/model.mlpackage/Data/com.apple.CoreML/model.mlmodel" in model
    plain = repo("diff", "--no-ext-diff", "HEAD~1")               # the text view stays
    assert "+    %input_21_cast_fp16: (1, 16, fp16) = relu(" in plain and "# 10 renamed" not in plain
    assert repo("config", "diff.miltext.command").strip().endswith("-m miltext.cli diff --git-external --")


def test_git_diff_names_a_changed_weight_and_its_max_difference(repo):
    run("git-setup", "--structural", cwd=repo.path, env=repo.env)
    package = _commit_model(repo, os.path.join(REVIEW, "mlp6.mlpackage"), "six layers")
    from miltext.model.io import read_model
    (const,) = [op for op in read_model(package).program.functions["main"].block.operations
                if op.outputs[0].name == "var_4_weight_to_fp16"]
    offset = const.attributes["val"].data.offset     # the canonical text leaves it to the layout
    weight = os.path.join(package, "Data", "com.apple.CoreML", "weights", "weight.bin")
    with WeightReader(weight) as reader:
        values = reader.read(offset).copy()
    values[5] += 0.25
    values[7] -= 0.5
    replace_blob(weight, offset, values)                         # only the weight file changes
    repo("add", "-A")
    repo("commit", "-qm", "two weights nudged")
    for diff in (repo("diff", "HEAD~1"), repo("diff", "HEAD~1", "HEAD"), run("diff", os.path.join(REVIEW, "mlp6.mlpackage"), package, cwd=repo.path).stdout):
        assert "# weight %var_4_weight_to_fp16 (16, 16, fp16) changed: 2 of 256 elements, max abs difference 0.5" in diff
        assert "# 1 op changed (const)" in diff
        changed = [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
        assert len(changed) == 2 and all("%var_4_weight_to_fp16" in line and "sha256:" in line for line in changed)


def test_external_diff_of_a_pb_that_is_no_mil_program_shows_its_text(repo):
    run("git-setup", "--structural", cwd=repo.path, env=repo.env)
    (repo.path / "graph.pb").write_bytes(b"\x0a\x05hello\xff")
    repo("add", "-A")
    repo("commit", "-qm", "one")
    (repo.path / "graph.pb").write_bytes(b"\x0a\x05world\xff")
    diff = repo("diff")
    assert diff.startswith("diff --miltext a/graph.pb b/graph.pb\n")
    assert "+# 8 bytes, sha256:" in diff and " # miltext: not shown as MIL text" in diff


# ---- paths git hands over as they are: one starting with `-` -----------------------------------

def _commit_dash_named_model(repo):
    """A model named `-h.mlmodel` committed, then changed in the work tree."""
    import shutil
    mlmodel = os.path.join("Data", "com.apple.CoreML", "model.mlmodel")
    shutil.copyfile(os.path.join(REVIEW, "mlp6.mlpackage", mlmodel), repo.path / "-h.mlmodel")
    repo("add", "--", "-h.mlmodel")
    repo("commit", "-qm", "a model named like an option")
    shutil.copyfile(os.path.join(REVIEW, "mlp7.mlpackage", mlmodel), repo.path / "-h.mlmodel")


@pytest.mark.parametrize("structural", [False, True])
def test_git_diff_of_a_model_named_like_an_option(repo, structural):
    result = run("git-setup", *(["--structural"] if structural else []), cwd=repo.path, env=repo.env)
    assert result.returncode == 0, result.stderr
    _commit_dash_named_model(repo)
    diff = repo("diff")
    assert "+    %linear_5_cast_fp16: (1, 16, fp16) = linear(" in diff
    if structural:
        assert diff.startswith("diff --miltext a/-h.mlmodel b/-h.mlmodel\n")
        assert _summary(diff)[0] == "# 4 ops added (2 const, linear, relu), 1 op changed (linear)"
    log = repo("log", "-p", "-1")                                 # textconv: the commit as text
    assert "+main[CoreML7](%x: (1, 8, fp16)) {" in log


def test_configs_written_before_the_dash_dash_still_work(repo):
    import shlex
    import sys
    command = f"{shlex.quote(sys.executable)} -m miltext.cli"
    assert run("git-setup", cwd=repo.path, env=repo.env).returncode == 0
    repo("config", "diff.miltext.textconv", f"{command} textconv")       # as older git-setups wrote
    _commit_dash_named_model(repo)
    assert "+    %linear_5_cast_fp16: (1, 16, fp16) = linear(" in repo("diff")
    repo("config", "diff.miltext.command", f"{command} diff --git-external")
    diff = repo("diff")
    assert _summary(diff)[0] == "# 4 ops added (2 const, linear, relu), 1 op changed (linear)"


# ---- git-setup checks everything before it changes anything -------------------------------------

def _local_config(repo) -> str:
    return repo("config", "--local", "--list")


def test_git_setup_keeps_a_latin1_gitattributes_byte_for_byte(repo):
    old = b"# caf\xe9, r\xe9sum\xe9 (Latin-1)\r\n*.txt text\r\n"
    (repo.path / ".gitattributes").write_bytes(old)
    result = run("git-setup", cwd=repo.path, env=repo.env)
    assert result.returncode == 0, result.stderr
    new = (repo.path / ".gitattributes").read_bytes()
    assert new.startswith(old)
    assert new[len(old):].split(b"\r\n")[1:] == [b"*.mlmodel diff=miltext", b"*.pb diff=miltext",
                                                 b"weight.bin diff=miltext", b"*.npy diff=miltext",
                                                 b"*.safetensors diff=miltext",
                                                 b"**/*.aimodel/main.mlirb diff=miltext", b""]
    assert repo("check-attr", "diff", "x.mlmodel").strip().endswith("diff: miltext")


def test_git_setup_writes_through_a_linked_gitattributes(repo):
    shared = repo.path / "shared"
    shared.mkdir()
    (shared / "attributes").write_bytes(b"*.txt text\n")
    os.symlink(os.path.join("shared", "attributes"), repo.path / ".gitattributes")
    result = run("git-setup", cwd=repo.path, env=repo.env)
    assert result.returncode == 0, result.stderr
    assert os.readlink(repo.path / ".gitattributes") == os.path.join("shared", "attributes")
    text = (shared / "attributes").read_text()
    assert text.startswith("*.txt text\n") and "*.mlmodel diff=miltext\n" in text


@pytest.mark.parametrize("kind", ["dangling link", "fifo", "folder", "nul bytes"])
def test_git_setup_refused_changes_neither_config_nor_files(repo, kind):
    attributes = repo.path / ".gitattributes"
    if kind == "dangling link":
        os.symlink("nowhere/attributes", attributes)
    elif kind == "fifo":
        os.mkfifo(attributes)
    elif kind == "folder":
        attributes.mkdir()
    else:
        attributes.write_bytes(b"*.txt text\n\0\0binary\n")
    (repo.path / "keep.txt").write_bytes(b"mine\n")
    config, listing = _local_config(repo), sorted(os.listdir(repo.path))
    before = attributes.read_bytes() if kind == "nul bytes" else None
    result = run("git-setup", "--structural", cwd=repo.path, env=repo.env)
    assert result.returncode == 1 and "Traceback" not in result.stderr and ".gitattributes" in result.stderr
    assert "internal error" not in result.stderr, result.stderr
    assert _local_config(repo) == config                          # no driver half set
    assert sorted(os.listdir(repo.path)) == listing
    assert (repo.path / "keep.txt").read_bytes() == b"mine\n"
    if kind == "dangling link":
        assert os.readlink(attributes) == "nowhere/attributes"
    if before is not None:
        assert attributes.read_bytes() == before


# ---- plain textconv names the const of each blob of weight.bin ----------------------------------

MLP = os.path.join(ROOT, "examples", "mlp")     # three blob weights: fc1 weight and bias, fc2 weight


def _changed(diff: str) -> list:
    return [line for line in diff.splitlines() if line.startswith(("+", "-")) and line[:3] not in ("+++", "---")]


def _bias_line(weight: str, sign: str) -> str:
    from miltext.model.weight_names import blob_labels
    from miltext.model.weights import describe
    (line,) = [line for line in describe(weight, blob_labels(weight)).splitlines() if "%fc1_bias_to_fp16" in line]
    return sign + line


@pytest.mark.parametrize("layout", ["package", "folder"])
def test_a_changed_weight_is_one_line_naming_its_const(repo, tmp_path, layout):
    import shutil

    import numpy as np

    from support.docs import fenced_blocks
    assert run("git-setup", cwd=repo.path, env=repo.env).returncode == 0
    if layout == "package":
        pack(MLP, str(repo.path / "mlp.mlpackage"))
        weight = repo.path / "mlp.mlpackage" / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    else:
        shutil.copytree(MLP, repo.path / "mlp")
        weight = repo.path / "mlp" / "weights" / "weight.bin"
    repo("add", "-A")
    repo("commit", "-qm", "the model")
    old = _bias_line(str(weight), "-")
    assert old.startswith("-%fc1_bias_to_fp16: (16, fp16), 32 bytes, sha256:")
    with WeightReader(weight) as reader:
        offset = [b.offset for b in reader.blobs()][1]
    replace_blob(weight, offset, np.zeros(16, np.float16))      # only the weight file changes
    new = _bias_line(str(weight), "+")
    diff = repo("diff")                                         # the work tree against the index
    assert _changed(diff) == [old, new]
    (shown,) = [b[2] for b in fenced_blocks(os.path.join(ROOT, "docs", "review.md")) if b[2].startswith(" # weight")]
    assert diff[diff.index("\n@@ ") + 1:].split("\n", 1)[1] == shown     # as docs/review.md shows it
    repo("add", "-A")
    repo("commit", "-qm", "a new bias")
    uncached = ("-c", "diff.miltext.cachetextconv=false")       # each side converted here, not from git's cache
    assert _changed(repo(*uncached, "diff", "HEAD~1")) == [old, new]
    assert _changed(repo(*uncached, "log", "-p", "-1")) == [old, new]        # two temporary copies
    assert _changed(repo("log", "-p", "-1")) == [old, new]

    copy = tmp_path / "copy" / "weight.bin"                     # the old blob with nothing beside it,
    copy.parent.mkdir()                                         # found in the history
    copy.write_bytes(subprocess.run(["git", "show", f"HEAD~1:{weight.relative_to(repo.path)}"], cwd=repo.path,
                                    env=repo.env, capture_output=True, check=True).stdout)
    text = run("textconv", copy, cwd=repo.path, env=repo.env).stdout
    assert old[1:] in text.splitlines() and "%fc2_weight_to_fp16: (4, 16, fp16), 128 bytes" in text


def test_a_lone_weight_file_shows_its_digests_quickly(tmp_path, monkeypatch):
    import shutil
    import time

    from miltext.model.file_text import textconv_text
    lone = tmp_path / "weight.bin"
    shutil.copyfile(os.path.join(MLP, "weights", "weight.bin"), lone)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))   # in no repository
    monkeypatch.chdir(tmp_path)
    result = run("textconv", lone, cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[0] == "# weight file: 3 blobs, 704 bytes (blob storage v2)"
    assert [line.split(", sha256:")[0] for line in lines[1:]] == [
        "blob: 128 x fp16, 256 bytes", "blob: 16 x fp16, 32 bytes", "blob: 64 x fp16, 128 bytes"]
    start = time.monotonic()
    assert textconv_text(str(lone)) == result.stdout
    # two git commands that fail at once: seconds would mean a wait, not a loaded machine
    assert time.monotonic() - start < 5


def test_a_model_that_does_not_fit_names_no_blob(tmp_path):
    import shutil

    from miltext.model.weight_names import blob_labels
    folder = tmp_path / "mlp"
    shutil.copytree(MLP, folder)                                # another model's weights beside model.mil
    shutil.copyfile(os.path.join(REVIEW, "mlp6.mlpackage", "Data", "com.apple.CoreML", "weights", "weight.bin"),
                    folder / "weights" / "weight.bin")
    assert blob_labels(str(folder / "weights" / "weight.bin")) == {}
    assert blob_labels(os.path.join(MLP, "weights", "weight.bin")) == {
        64: "%fc1_weight_to_fp16: (16, 8, fp16)", 384: "%fc1_bias_to_fp16: (16, fp16)",
        512: "%fc2_weight_to_fp16: (4, 16, fp16)"}


def test_git_past_its_deadline_leaves_the_blobs_unnamed(repo, tmp_path, monkeypatch):
    import shutil

    from miltext.model import weight_names
    shutil.copytree(MLP, repo.path / "mlp")
    repo("add", "-A")
    repo("commit", "-qm", "the model")
    copy = tmp_path / "weight.bin"
    shutil.copyfile(repo.path / "mlp" / "weights" / "weight.bin", copy)
    monkeypatch.chdir(repo.path)
    monkeypatch.setenv("GIT_DIR", str(repo.path / ".git"))
    assert len(weight_names.blob_labels(str(copy))) == 3        # found in the index
    monkeypatch.setattr(weight_names, "DEADLINE", 0.0)
    assert weight_names.blob_labels(str(copy)) == {}
