"""The `miltext` command, run as a user runs it (a subprocess, files in a temporary folder):
print and build agree with the library and with the corpus bytes, a failed build writes
nothing and leaves an existing output alone, errors are `file:line:col: error: ...` on stderr
with exit status 1 (never a traceback), and a wrong command line exits 2."""
import os
import re
import shutil
import subprocess
import sys

import pytest

import miltext
from support.cli import corpus_path, run

PB_CASES = ["coremltools/torch_mlp", "coremltools/cond_basic", "edge/odd_names_and_strings",
            "edge/nested_values_and_blob_refs", "edge/program_doc_and_attributes"]


def copy_in(tmp_path, name: str, suffix: str = ".pb") -> str:
    """Copy a corpus file into tmp_path; its bare file name (commands run in tmp_path)."""
    target = os.path.basename(name) + suffix
    shutil.copy(corpus_path(name, suffix), tmp_path / target)
    return target


def canonical(name: str) -> str:
    with open(corpus_path(name), "rb") as f:
        return miltext.dumps(miltext.Program.from_proto(f.read()))


def assert_clean_failure(result, status: int = 1):
    """Failed as a tool should: the status, something on stderr, nothing on stdout, no traceback."""
    assert result.returncode == status, (result.returncode, result.stderr)
    assert result.stdout == ""
    assert result.stderr.strip()
    assert "Traceback" not in result.stderr, result.stderr


def leftovers(folder) -> list[str]:
    """Temporary files a build could leave behind."""
    return [n for n in os.listdir(folder) if n.startswith(".miltext-") or n.endswith(".tmp")]


BAD_TEXT = ("main[CoreML7](%x: (2, fp32)) {\n  block0() {\n"
            '    %y: (2, fp32) = relu(x=$x, name="y")\n  } -> (%y)\n}\n')


# ---- print ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PB_CASES)
def test_print_of_a_pb_is_its_canonical_text(name, tmp_path):
    result = run("print", copy_in(tmp_path, name), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert result.stdout == canonical(name)


@pytest.mark.parametrize("name", PB_CASES)
def test_print_of_canonical_text_is_the_same_text(name, tmp_path):
    text = canonical(name)
    (tmp_path / "model.mil").write_text(text, encoding="utf-8")
    result = run("print", "model.mil", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == text


def test_print_of_a_coremltools_print_is_canonical_text(tmp_path):
    name = copy_in(tmp_path, "coremltools/cond_basic", ".pymil.txt")
    result = run("print", name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == miltext.dumps(miltext.load(tmp_path / name))
    assert "(Tensor)" not in result.stdout


def test_print_of_a_missing_file_says_so(tmp_path):
    result = run("print", "nowhere.pb", cwd=tmp_path)
    assert_clean_failure(result)
    assert "nowhere.pb" in result.stderr and "No such file" in result.stderr


def test_print_of_a_folder_says_so(tmp_path):
    (tmp_path / "folder.mil").mkdir()
    result = run("print", "folder.mil", cwd=tmp_path)
    assert_clean_failure(result)
    assert "folder.mil" in result.stderr


def test_print_of_binary_text_file_says_it_is_not_text(tmp_path):
    (tmp_path / "binary.mil").write_bytes(b"\xff\xfe\x00main")
    result = run("print", "binary.mil", cwd=tmp_path)
    assert_clean_failure(result)
    assert "binary.mil" in result.stderr and "UTF-8" in result.stderr


def test_print_of_text_with_a_syntax_error_points_at_it(tmp_path):
    (tmp_path / "bad.mil").write_text(BAD_TEXT, encoding="utf-8")
    result = run("print", "bad.mil", cwd=tmp_path)
    assert_clean_failure(result)
    assert result.stderr.startswith("bad.mil:3:28: error: ")


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_print_into_a_closed_pipe_is_quiet(reader, tmp_path):
    """`miltext print big.pb | head -1`: the reader goes away early (`true` before the first
    write, so the write surely fails); no BrokenPipe traceback, no error message."""
    ops = "".join(f'    %y{i}: (2, fp32) = relu(x=%{"x" if i == 0 else f"y{i - 1}"}, name="y{i}")\n'
                  for i in range(5000))
    text = "main[CoreML7](%x: (2, fp32)) {\n  block0() {\n" + ops + "  } -> (%y4999)\n}\n"
    program = miltext.loads(text)
    (tmp_path / "big.pb").write_bytes(program.to_proto().SerializeToString(deterministic=True))
    assert len(text) > 2 * 65536  # well past what a pipe buffers
    command = f'"{sys.executable}" -m miltext.cli print big.pb | {reader}'
    result = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.stdout == ("main[CoreML7](%x: (2, fp32)) {\n" if reader == "head -1" else "")
    assert result.stderr == "", result.stderr


# ---- build ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", PB_CASES)
def test_build_of_canonical_text_gives_the_original_bytes(name, tmp_path):
    (tmp_path / "model.mil").write_text(canonical(name), encoding="utf-8")
    result = run("build", "model.mil", "-o", "out.pb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    # build says what check says: nothing for most programs, the warnings of an odd one
    checked = run("check", "model.mil", cwd=tmp_path)
    assert result.stdout == "" and _diagnostic_lines(result.stderr) == _diagnostic_lines(checked.stdout)
    assert ": error:" not in result.stderr
    with open(corpus_path(name), "rb") as f:
        assert (tmp_path / "out.pb").read_bytes() == f.read()


def _diagnostic_lines(output: str) -> list:
    return [line for line in output.splitlines() if re.match(r"model\.mil:\d+:\d+: \w+:", line)]


def test_build_is_deterministic(tmp_path):
    (tmp_path / "model.mil").write_text(canonical("coremltools/cond_basic"), encoding="utf-8")
    outputs = []
    for out in ("a.pb", "b.pb"):
        assert run("build", "model.mil", "-o", out, cwd=tmp_path).returncode == 0
        outputs.append((tmp_path / out).read_bytes())
    assert outputs[0] == outputs[1]


def test_build_then_print_gives_the_text_back(tmp_path):
    text = canonical("edge/loop_and_value_bindings")
    (tmp_path / "model.mil").write_text(text, encoding="utf-8")
    assert run("build", "model.mil", "--output", "model.pb", cwd=tmp_path).returncode == 0
    assert run("print", "model.pb", cwd=tmp_path).stdout == text


def test_build_of_text_with_a_syntax_error_writes_nothing(tmp_path):
    (tmp_path / "bad.mil").write_text(BAD_TEXT, encoding="utf-8")
    result = run("build", "bad.mil", "-o", "out.pb", cwd=tmp_path)
    assert_clean_failure(result)
    lines = result.stderr.splitlines()
    assert lines[0] == "bad.mil:3:28: error: " + lines[0].split(": error: ", 1)[1]
    assert lines[1] == '    %y: (2, fp32) = relu(x=$x, name="y")'
    assert lines[2] == " " * 27 + "^"
    assert not (tmp_path / "out.pb").exists()
    assert leftovers(tmp_path) == []


def test_build_of_a_print_with_dangling_names_names_the_undefined_var(tmp_path):
    """coremltools' print leaves out consts; building needs them: say which, and where."""
    name = copy_in(tmp_path, "coremltools/torch_mlp", ".pymil.txt")
    result = run("build", name, "-o", "out.pb", cwd=tmp_path)
    assert_clean_failure(result)
    assert re.match(rf"{re.escape(name)}:4:\d+: error: .*%?var_0_weight_to_fp16", result.stderr), result.stderr
    assert not (tmp_path / "out.pb").exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("source", ["syntax-error", "dangling-names"])
def test_failed_build_leaves_an_existing_output_untouched(source, tmp_path):
    old = b"previous build output\x00\xff"
    (tmp_path / "out.pb").write_bytes(old)
    if source == "syntax-error":
        (tmp_path / "in.mil").write_text(BAD_TEXT, encoding="utf-8")
        name = "in.mil"
    else:
        name = copy_in(tmp_path, "coremltools/torch_mlp", ".pymil.txt")
    result = run("build", name, "-o", "out.pb", cwd=tmp_path)
    assert_clean_failure(result)
    assert (tmp_path / "out.pb").read_bytes() == old
    assert leftovers(tmp_path) == []


def test_build_into_a_missing_folder_names_the_output(tmp_path):
    """The message names the file the user asked for, not a temporary file of miltext's."""
    (tmp_path / "model.mil").write_text(canonical("coremltools/cond_basic"), encoding="utf-8")
    result = run("build", "model.mil", "-o", os.path.join("missing", "out.pb"), cwd=tmp_path)
    assert_clean_failure(result)
    assert os.path.join("missing", "out.pb") in result.stderr, result.stderr
    assert ".tmp" not in result.stderr, result.stderr


# ---- the command line ----------------------------------------------------------------------

@pytest.mark.parametrize("args", [[], ["frobnicate"], ["print"], ["print", "a.mil", "b.mil"],
                                  ["build", "a.mil"], ["build", "-o", "out.pb"], ["--no-such-flag"]],
                         ids=["nothing", "unknown-command", "print-without-file", "print-two-files",
                              "build-without-output", "build-without-input", "unknown-flag"])
def test_wrong_command_line_exits_2_with_usage(args, tmp_path):
    result = run(*args, cwd=tmp_path)
    assert_clean_failure(result, status=2)
    assert "usage:" in result.stderr


def test_version(tmp_path):
    result = run("--version", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"miltext {miltext.__version__}"


def test_installed_script_runs(tmp_path):
    """The `miltext` console script next to the interpreter is the same command."""
    script = os.path.join(os.path.dirname(sys.executable), "miltext")
    assert os.path.exists(script)
    shutil.copy(corpus_path("coremltools/cond_basic"), tmp_path / "m.pb")
    result = subprocess.run([script, "print", "m.pb"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout == canonical("coremltools/cond_basic")
