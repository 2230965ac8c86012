"""What a newcomer meets in the first hour (issue 28): `check` predicts `build`, `build` shows
check's warnings, the quick start commands are light, the examples build or say why not, and a
slip in the spelling of the text gets the right spelling as a hint."""
import os
import subprocess
import sys

import pytest

from miltext.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def command(capsys, *args) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def program(*ops: str, signature: str = "main[CoreML7](%x: (1, 2, fp32))", out: str = "%y") -> str:
    body = "".join(f"    {op}\n" for op in ops)
    return f"{signature} {{\n  block0() {{\n{body}  }} -> ({out})\n}}\n"


# ---- check and build agree ------------------------------------------------------------------

REFUSED = {
    "unknown op": program("%y = reluu(x=%x)"),
    "a name defined twice": program("%y = relu(x=%x)", "%y = relu(x=%y)"),
    "a misspelt input": program("%y = leaky_relu(x=%x, alpah=0.1)"),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_what_build_refuses_check_reports_as_an_error(name, tmp_path, capsys):
    source = write(tmp_path, "model.mil", REFUSED[name])
    status, report, summary = command(capsys, "check", source)
    assert status == 1 and summary == "1 error, 0 warnings\n"     # one mistake, one error
    output = tmp_path / "model.mlpackage"
    status, out, err = command(capsys, "build", source, "-o", str(output))
    assert status == 1 and not output.exists()
    assert err == report + "1 error, 0 warnings; nothing written (--no-verify writes it anyway)\n"


def test_build_shows_the_warnings_check_shows_and_writes(tmp_path, capsys):
    source = write(tmp_path, "model.mil", program("%y = relu(x=%x)", signature="main(%x: (1, 2, fp32))"))
    status, report, summary = command(capsys, "check", source)
    assert status == 0 and "warning: function main has no opset" in report
    output = tmp_path / "program.pb"
    status, out, err = command(capsys, "build", source, "-o", str(output))
    assert (status, out) == (0, "") and output.is_file()
    assert err == report + summary


def test_a_clean_build_says_nothing(tmp_path, capsys):
    source = write(tmp_path, "model.mil", program("%y = relu(x=%x)"))
    assert command(capsys, "build", source, "-o", str(tmp_path / "p.pb")) == (0, "", "")


def test_a_custom_op_is_a_warning_and_builds(tmp_path, capsys):
    source = write(tmp_path, "model.mil", program('%y: (1, 2, fp32) = my_kernel(x=%x, name="y")[custom=True]'))
    status, _, err = command(capsys, "build", source, "-o", str(tmp_path / "p.pb"))
    assert status == 0 and "warning: my_kernel is a custom op" in err and err.endswith("0 errors, 1 warning\n")


# ---- --version and --help start without numpy ------------------------------------------------

PROBE = """
import runpy, sys
sys.argv = ["miltext", *sys.argv[1:]]
try:
    runpy.run_module("miltext.cli", run_name="__main__")
except SystemExit as e:
    assert not e.code, e.code
print(" ".join(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_neither_numpy_nor_a_command(flag):
    result = subprocess.run([sys.executable, "-c", PROBE, flag], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.returncode == 0, result.stderr
    modules = set(result.stderr.split())
    assert not modules & {"numpy", "lark", "google.protobuf", "coremltools"}
    assert not [m for m in modules if m.startswith("miltext.cli.") and m != "miltext.cli.__main__"]
    if flag == "--help":
        assert "textconv" in result.stdout and "git-setup" in result.stdout


def test_a_wrong_command_is_a_command_line_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(["frobnicate"])
    assert e.value.code == 2 and "invalid choice: 'frobnicate'" in capsys.readouterr().err


# ---- licence ------------------------------------------------------------------------------------

def read(*parts: str) -> str:
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return f.read()


def test_apache_licence_at_the_top_in_the_package_metadata_and_in_the_extension():
    import json
    licence = read("LICENSE")
    assert "Apache License\n                           Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence
    pyproject = read("pyproject.toml")
    assert 'license = "Apache-2.0"' in pyproject and 'license-files = ["LICENSE"]' in pyproject
    assert read("editors", "vscode", "LICENSE") == licence
    manifest = json.loads(read("editors", "vscode", "package.json"))
    assert manifest["license"] == "Apache-2.0" and "repository" not in manifest


def test_no_placeholder_repository_anywhere_a_user_reads():
    for parts in (("README.md",), ("editors", "vscode", "README.md"), ("editors", "vscode", "package.json"),
                  ("docs", "tutorial.md"), ("examples", "README.md"), (".pre-commit-hooks.yaml",)):
        assert "OWNER/" not in read(*parts), parts


# ---- make demo ----------------------------------------------------------------------------------

def make_rule(target: str) -> str:
    """The recipe of a Makefile rule (the lines after `target:` up to the next blank line)."""
    makefile = read("Makefile")
    start = makefile.index(f"\n{target}:") + 1
    end = makefile.find("\n\n", start)
    return makefile[start:end if end >= 0 else None]


def expanded_rule(target: str) -> str:
    """The recipe of a rule as make runs it (its macros expanded), one shell command a line."""
    result = subprocess.run(["make", "-n", "-B", target], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout.replace("\\\n", "\n").replace("; ", "\n")


def test_make_demo_installs_only_what_the_demo_needs_and_says_where_miltext_is():
    demo = make_rule("demo")
    assert demo.startswith("demo: $(DEMO_STAMP)")
    setup = make_rule("$(DEMO_STAMP)")
    assert "pip install --quiet -e .\n" in setup and "[" not in setup.split("pip install", 1)[1]
    assert "activate" in demo and "PATH" in demo


def test_make_test_announces_what_it_installs_before_installing_it():
    for target in ("have-vim", "have-nvim", "$(NODE_STAMP)", "$(VSCODE_STAMP)", "$(STAMP)"):
        rule = expanded_rule(target) if target.startswith("have-") else make_rule(target)
        installs = [i for i, line in enumerate(rule.split("\n")) if "echo" not in line and
                    ("apt-get install" in line or "npm ci" in line or "pip install" in line)]
        says = [i for i, line in enumerate(rule.split("\n")) if "echo \"== " in line]
        assert installs and says and says[0] < installs[0], target
    for target in ("have-vim", "have-nvim"):
        assert "brew install" in expanded_rule(target)      # and what to do on macOS


# ---- the examples -------------------------------------------------------------------------------

EXAMPLES = os.path.join(ROOT, "examples")
PROGRAM_ONLY = {"control_flow.mil": "input %pred is bool"}     # what build says of it


def example_sources() -> list[str]:
    import glob
    found = glob.glob(os.path.join(EXAMPLES, "*.mil")) + glob.glob(os.path.join(EXAMPLES, "*", "model.mil"))
    return sorted(os.path.relpath(p, EXAMPLES) for p in found)


@pytest.mark.parametrize("name", example_sources())
def test_every_example_builds_into_a_model_or_says_why_it_is_a_program(name, tmp_path, capsys):
    source = os.path.join(EXAMPLES, name)
    package = tmp_path / "out.mlpackage"
    status, _, err = command(capsys, "build", source, "-o", str(package))
    if name not in PROGRAM_ONLY:
        assert (status, err) == (0, "") and package.is_dir()
        return
    assert status == 1 and PROGRAM_ONLY[name] in err and not package.exists()
    row = next(line for line in read("examples", "README.md").split("\n") if line.startswith(f"| `{name}`"))
    assert "a program" in row and "bool" in row
    assert command(capsys, "build", source, "-o", str(tmp_path / "program.pb"))[0] == 0


def test_the_examples_readme_says_what_make_demo_does():
    readme = read("examples", "README.md")
    said = readme[readme.index("`make demo`"):]
    assert said.split("\n\n")[0].count("mlp/model.mil") == 1 and "mlp.mlpackage" in said
    demo = make_rule("demo")
    assert "print examples/mlp/model.mil" in demo and "$(OUT)/mlp.mlpackage" in demo


# ---- every `pip install` line of the docs and messages, against a wheel built here -------------

import glob  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import shutil  # noqa: E402

# Where a user reads a `pip install` line: the docs, the editors' READMEs and manifest, the
# examples and every message of miltext's.
PIP_SOURCES = ["README.md", "docs/*.md", "examples/README.md", "examples/**/*.py", "editors/vscode/README.md",
               "editors/vscode/package.json", "miltext/**/*.py", "bench/*.md", "bench/*.py"]
PIP_LINE = re.compile(r"pip install ([^`\n#]*)")
EXTRA_MODULES = {"lsp": "pygls", "pygments": "pygments", "weights": "safetensors", "coremltools": "coremltools",
                 "coreai": "coreai",
                 "test": "hypothesis"}


def pip_lines() -> dict:
    """{the arguments of a `pip install` line that installs miltext: where it is written}."""
    found = {}
    for pattern in PIP_SOURCES:
        for path in sorted(glob.glob(os.path.join(ROOT, pattern), recursive=True)):
            for n, line in enumerate(read(os.path.relpath(path, ROOT)).split("\n"), 1):
                for m in PIP_LINE.finditer(line):
                    args = m.group(1).strip()
                    if "miltext" in args or args.startswith(("-e", ".", "'.", '".', '"$(')):
                        found.setdefault(args.rstrip(" ,."), f"{os.path.relpath(path, ROOT)}:{n}")
    return found


def as_wheel_line(args: str, wheel: str) -> tuple[list, set]:
    """The pip arguments of a docs line with the checkout (`.`, `-e .`) or the built wheel
    (`$(ls dist/miltext-*.whl)`) replaced by `wheel`, other packages (torch) left out; and the
    extras it asks for. A line of another shape fails: it would be one no test covers."""
    tokens = [t for t in shlex.split(args) if t != "-e"]
    out, extras = [], set()
    for t in tokens:
        m = re.fullmatch(r"(?:\.|\$\(ls dist/miltext-\*\.whl\))(?:\[([a-z,]+)\])?", t)
        if m:
            extras |= set((m.group(1) or "").split(",")) - {""}
            out.append(wheel + (f"[{m.group(1)}]" if m.group(1) else ""))
        elif re.fullmatch(r"[A-Za-z0-9_-]+(==[\w.]+)?", t) and t != "miltext":
            continue                                     # another package (torch): not ours to test
        else:
            pytest.fail(f"a pip install line of unknown shape: {args!r}")
    assert out, f"no miltext in {args!r}"
    return out, extras


def test_the_docs_pip_lines_are_found_and_none_names_an_index_package():
    lines = pip_lines()
    assert "-e '.[lsp]'" in lines and '"$(ls dist/miltext-*.whl)[lsp,weights]"' in lines
    for args, where in lines.items():
        assert "miltext[" not in args and args.split("[")[0] not in ("miltext", "'miltext", '"miltext'), where
        as_wheel_line(args, "/w.whl")


@pytest.fixture(scope="session")
def wheel(tmp_path_factory):
    """A wheel of this tree, built once (from a copy: the checkout gets no build/ folder)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "node_modules", "build", "dist", "tests", "bench", "fuzz", "__pycache__", "*.so", "*.egg-info"))
    run = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"),
                          str(source)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    (found,) = glob.glob(str(tmp / "dist" / "miltext-*.whl"))
    return found


@pytest.fixture(scope="session")
def clean_venv(tmp_path_factory):
    """A venv with nothing in it, made by the interpreter this venv was made from."""
    venv = tmp_path_factory.mktemp("clean") / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True, timeout=300)
    return str(venv / "bin")


@pytest.mark.slow
def test_every_pip_line_installs_from_the_wheel_with_its_extras(wheel, clean_venv, tmp_path):
    for args, where in pip_lines().items():
        pip_args, extras = as_wheel_line(args, wheel)
        run = subprocess.run([os.path.join(clean_venv, "python"), "-m", "pip", "install", *pip_args],
                             capture_output=True, text=True, timeout=900, cwd=tmp_path)
        assert run.returncode == 0, f"{where}: pip install {args}\n{run.stdout}{run.stderr}"
        assert "does not provide the extra" not in run.stdout + run.stderr, where
        for extra in extras:
            probe = subprocess.run([os.path.join(clean_venv, "python"), "-c", f"import {EXTRA_MODULES[extra]}"],
                                   capture_output=True, text=True, cwd=tmp_path, timeout=120)
            assert probe.returncode == 0, f"{where}: the {extra} extra gave no {EXTRA_MODULES[extra]}: {probe.stderr}"
    version = subprocess.run([os.path.join(clean_venv, "miltext"), "--version"], capture_output=True, text=True,
                             cwd=tmp_path, timeout=60)
    assert version.stdout == "miltext 0.1.0\n"
    where = subprocess.run([os.path.join(clean_venv, "python"), "-c", "import miltext; print(miltext.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60).stdout
    assert where.startswith(os.path.dirname(clean_venv)), where       # the wheel's, not the checkout's


# ---- a fresh machine: clone, the README's set-up, `miltext` on the PATH, its examples -----------

@pytest.mark.slow
def test_fresh_clone_set_up_as_the_readme_says(tmp_path):
    """git clone -> the README's `<!-- setup -->` lines in one shell -> `miltext` on the PATH ->
    the README's mistake example gives, as `miltext`, what the README shows. What is cloned is
    the committed tree."""
    from support.docs import README, fenced_blocks
    if shutil.which("git") is None or shutil.which("make") is None:
        pytest.fail("git and make are needed (the README's set-up uses them)", pytrace=False)
    clone = tmp_path / "miltext"
    subprocess.run(["git", "clone", "--quiet", ROOT, str(clone)], check=True, timeout=300)
    blocks = fenced_blocks(README)
    (setup,) = [b[2] for b in blocks if b[3] == "setup"]
    (index, (_, _, source, mark)), = [(i, b) for i, b in enumerate(blocks) if b[3].startswith("mistake:")]
    name = mark.split(":", 1)[1].strip()
    command_line, expected = blocks[index + 1][2].split("\n", 1)
    (clone / name).write_text(source, encoding="utf-8")
    assert command_line.startswith("$ miltext ")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep)
                                  if not p.startswith(os.path.dirname(sys.executable)))   # not this venv's miltext
    script = f"set -e\n{setup}\ncommand -v miltext\n{command_line[2:]} 2>&1 || echo \"exit $?\"\n"
    run = subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, timeout=1200)
    assert run.returncode == 0, run.stdout + run.stderr
    out = run.stdout
    assert "== round trip text -> .mlpackage -> text: identical" in out      # make demo did its job
    assert "miltext 0.1.0\n" in out and f"{clone}/.venv/bin/miltext\n" in out  # on the PATH, from the clone
    assert out.endswith(expected + "exit 1\n")
    assert not (clone / "tiny.mlpackage").exists()


# ---- a slip in the spelling gets the right spelling as a hint ------------------------------------

SLIPS = {
    "// a comment": (program("// a comment", "%y = relu(x=%x)"), 3, "; a comment starts with '#'"),
    "float32": (program("%y = relu(x=%x)", signature="main[CoreML7](%x: (1, 2, float32))"), 1,
                "unknown dtype float32; did you mean fp32?"),
    "no block": ("main[CoreML7](%x: (1, 2, fp32)) {\n    %y = relu(x=%x)\n}\n", 2,
                 "; a function's ops go in a block: `block0() {` before them and `} -> (%outputs)` after"),
}


@pytest.mark.parametrize("slip", list(SLIPS))
def test_a_slip_gets_the_right_spelling(slip):
    import miltext
    text, line, words = SLIPS[slip]
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text, "slip.mil")
    assert info.value.line == line and words in str(info.value)
    assert str(info.value).startswith(f"slip.mil:{line}:")


# ---- miltext run: fp16 tolerances, the CLI's words for states, a plain word for a bad .npz -------

RELU16 = program("%y = relu(x=%x)", signature="main[CoreML7](%x: (1, 2, fp16))")


def expect(tmp_path, capsys, reference, *flags):
    import numpy as np
    np.savez(tmp_path / "ref.npz", y=reference)
    source = write(tmp_path, "relu16.mil", RELU16)
    return command(capsys, "run", source, "-i", "x=[[1.0, 2.0]]", "--expect", str(tmp_path / "ref.npz"), *flags)


def test_expect_holds_an_fp16_output_to_fp16_tolerances(tmp_path, capsys):
    import numpy as np
    one_ulp = float(np.nextafter(np.float16(2.0), np.float16(3.0)))         # 2.002: one fp16 step off
    status, out, err = expect(tmp_path, capsys, np.array([[1.0, one_ulp]], np.float32))
    assert (status, err) == (0, "") and out.startswith("%y: ok")
    status, _, err = expect(tmp_path, capsys, np.array([[1.0, 2.02]], np.float32))       # ten steps off
    assert status == 1 and "outside rtol=0.001 atol=0.001" in err
    status, _, err = expect(tmp_path, capsys, np.array([[1.0, one_ulp]], np.float32), "--rtol", "1e-4", "--atol", "1e-5")
    assert status == 1 and "outside rtol=0.0001 atol=1e-05" in err                      # the flags still rule


def test_expect_of_an_npz_of_python_objects_is_a_plain_error(tmp_path, capsys):
    import numpy as np
    status, out, err = expect(tmp_path, capsys, np.array([{"a": 1}, None], dtype=object))
    assert status == 1 and err.endswith(": error: y.npy: holds Python objects, not numbers\n")
    assert "pickle" not in err and "not an .npz file" not in err


def test_a_state_not_given_is_asked_for_in_the_command_lines_words(tmp_path, capsys):
    status, _, err = command(capsys, "run", os.path.join(EXAMPLES, "state.mil"), "-i", "x=1")
    assert status == 1 and "state %acc is not given: give its starting value (`-i acc=FILE.npy` to miltext run" in err


# ---- the README's Python API runs as shown -----------------------------------------------------

def test_the_readmes_python_api_blocks_run_as_shown(tmp_path, monkeypatch, capsys):
    from support.docs import README, fenced_blocks
    blocks = [b[2] for b in fenced_blocks(README) if b[3] == "python api"]
    assert len(blocks) == 2
    os.symlink(EXAMPLES, tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    for body in blocks:
        exec(compile(body, "README.md", "exec"), {})
        printed = capsys.readouterr().out.splitlines()
        shown = [line.split("# ", 1)[1] for line in body.splitlines() if line.startswith("print(") and "# " in line]
        assert [p.startswith(s.split(" ...")[0].rstrip(")")) for p, s in zip(printed, shown)] == [True] * len(shown), \
            (printed, shown)
    assert (tmp_path / "mlp.mlpackage" / "Data" / "com.apple.CoreML" / "weights" / "weight.bin").is_file()


def test_value_array_of_a_blob_says_how_to_read_it():
    import miltext
    from miltext.ir import Blob
    value = miltext.Value(miltext.TensorType("fp16", (2,)), Blob(64, "@model_path/weights/weight.bin"))
    with pytest.raises(TypeError, match=r"Weights\(model.folder\).blob_array\(value\)"):
        _ = value.array


def test_the_layout_table_names_every_doc():
    row = next(line for line in read("README.md").split("\n") if line.startswith("| `docs/` |"))
    for doc in sorted(os.listdir(os.path.join(ROOT, "docs"))):
        if doc.endswith(".md"):
            assert f"`{doc}`" in row, doc


# ---- review: a const that switches between a blob and an inline value --------------------------

def test_diff_of_a_const_moving_between_blob_and_inline_has_no_dangling_comment(tmp_path, capsys):
    import numpy as np

    from miltext.model import read_model
    from miltext.model.blobs import Weights
    for side in ("a", "b"):
        shutil.copytree(os.path.join(EXAMPLES, "mlp"), tmp_path / side)
    model = read_model(str(tmp_path / "b" / "model.mil"))
    const = next(op for op in model.program.functions["main"].block.operations if op.name == "fc2_weight_to_fp16")
    with Weights(model.folder) as weights:
        values = weights.blob_array(const.attributes["val"]).astype(np.float32)
    inline = "fp16(" + np.array2string(values, separator=", ", threshold=10**6, max_line_width=10**6) + ")"
    text = (tmp_path / "b" / "model.mil").read_text(encoding="utf-8")
    blob = 'const(val=(4, 16, fp16)(blob), name="fc2_weight_to_fp16")'
    assert blob in text
    (tmp_path / "b" / "model.mil").write_text(text.replace(blob, f'const(val={inline}, name="fc2_weight_to_fp16")'),
                                              encoding="utf-8")
    for old, new in (("a", "b"), ("b", "a")):
        status, out, err = command(capsys, "diff", str(tmp_path / old / "model.mil"), str(tmp_path / new / "model.mil"))
        changed = [line for line in out.split("\n") if line[:1] in ("-", "+") and "fc2_weight_to_fp16 =" in line.replace(":", " =", 1)]
        assert status == 1 and err == "" and len(changed) == 2, out
        for line in changed:
            assert not line.rstrip().endswith("#")
            assert ("(blob)" in line) == ("# sha256:" in line), line


# ---- checkpoints in git: one line per tensor -----------------------------------------------------

def write_safetensors(path, tensors: dict) -> None:
    """A .safetensors file written by hand (the format: a little-endian header length, the JSON
    header, the data), so that the test needs no safetensors package."""
    import json
    import struct
    header, data = {}, b""
    for name, array in tensors.items():
        raw = array.tobytes()
        header[name] = {"dtype": {"float32": "F32", "int32": "I32"}[str(array.dtype)], "shape": list(array.shape),
                        "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def test_textconv_of_checkpoints_is_one_line_per_tensor_as_the_review_doc_shows(tmp_path, capsys):
    import numpy as np

    from support.docs import fenced_blocks
    write_safetensors(tmp_path / "m.safetensors", {"layers.0.wq": np.ones((2, 3), np.float32),
                                                   "emb": np.zeros(4, np.int32)})
    status, out, _ = command(capsys, "textconv", str(tmp_path / "m.safetensors"))
    (shown,) = [b[2] for b in fenced_blocks(os.path.join(ROOT, "docs", "review.md")) if b[2].startswith("# safetensors:")]
    assert (status, out) == (0, shown.replace("176 bytes", f"{(tmp_path / 'm.safetensors').stat().st_size} bytes"))
    np.save(tmp_path / "w.npy", np.arange(12, dtype=np.float16).reshape(3, 4))
    status, out, _ = command(capsys, "textconv", str(tmp_path / "w.npy"))
    assert (status, out) == (0, "# npy: (3, 4, fp16), 24 bytes, sha256:38c27038\n")
    (tmp_path / "junk.npy").write_bytes(b"junk")
    status, out, _ = command(capsys, "textconv", str(tmp_path / "junk.npy"))      # never fails: git shows it
    assert status == 0 and out.startswith("# miltext: not shown as MIL text (is not a .npy file")


def test_git_log_shows_which_tensor_of_a_checkpoint_changed(tmp_path):
    import numpy as np
    if shutil.which("git") is None:
        pytest.fail("git is not installed", pytrace=False)
    home, path = tmp_path / "home", tmp_path / "repo"
    home.mkdir()
    path.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}

    def git(*args):
        result = subprocess.run(["git", *args], cwd=path, env=env, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        return result.stdout

    git("init", "-q")
    setup = subprocess.run([sys.executable, "-m", "miltext.cli", "git-setup"], cwd=path, env=env,
                           capture_output=True, text=True, timeout=120)
    assert setup.returncode == 0, setup.stderr
    tensors = {"layers.0.wq": np.ones((2, 3), np.float32), "emb": np.zeros(4, np.int32)}
    write_safetensors(path / "model.safetensors", tensors)
    git("add", "-A")
    git("commit", "-qm", "checkpoint")
    tensors["emb"] = np.arange(4, dtype=np.int32)
    write_safetensors(path / "model.safetensors", tensors)
    git("commit", "-qam", "new embedding")
    log = git("log", "-p", "-1")
    assert "Binary files" not in log
    changed = [line for line in log.split("\n") if line[:1] in ("-", "+") and not line.startswith(("---", "+++"))]
    assert len(changed) == 2 and all(line[1:].startswith("emb: (4, int32), sha256:") for line in changed)
