"""The command line a user expects: `-` is stdin for print, check and infer (as for fmt);
build -o refuses its own input and suffixes it does not write; every error says `error:`; the
progress bar moves while a file is read and checked, and fmt and check show one."""
import io
import os
import re
import time

import pytest

import miltext.progress
from miltext.cli import main
from miltext.progress import Progress
from support.cli import corpus_path

HAND = "main[CoreML7](%x: (1, 2, fp32)) {\n  block0() {\n    %y = relu(x=%x)\n  } -> (%y)\n}\n"
TYPO = HAND.replace("x=%x", "x=%xx")


def command(capsys, *args) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


# ---- stdin ---------------------------------------------------------------------------------------

def stdin(monkeypatch, data) -> None:
    raw = data.encode("utf-8") if isinstance(data, str) else data
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))


def test_print_check_and_infer_read_stdin(monkeypatch, capsys):
    stdin(monkeypatch, HAND)
    assert command(capsys, "print", "-") == (0, HAND, "")
    stdin(monkeypatch, TYPO)
    status, out, _ = command(capsys, "check", "-")
    assert status == 1 and out.startswith("<stdin>:3:17: error: %xx is not defined; did you mean %x?\n    %y = relu(x=%xx)\n")
    stdin(monkeypatch, HAND)
    status, out, _ = command(capsys, "infer", "-")
    assert status == 0 and '%y: (1, 2, fp32) = relu(x=%x, name="y")' in out
    stdin(monkeypatch, HAND.replace("relu(x=%x)", "add(x=%x, y=[1.0, 2.0, 3.0])"))
    status, _, err = command(capsys, "infer", "-")
    assert status == 1 and err.startswith("<stdin>:3:"), err


def test_print_reads_a_serialized_program_on_stdin(monkeypatch, capsys):
    with open(corpus_path("coremltools/activations"), "rb") as f:
        stdin(monkeypatch, f.read())
    from_stdin = command(capsys, "print", "-")
    assert from_stdin == command(capsys, "print", corpus_path("coremltools/activations")) and from_stdin[0] == 0


def test_build_reads_stdin_with_model_path_the_current_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    stdin(monkeypatch, HAND)
    assert command(capsys, "build", "-", "-o", "out.mlpackage") == (0, "", "")
    assert (tmp_path / "out.mlpackage").is_dir()
    stdin(monkeypatch, TYPO)
    status, _, err = command(capsys, "build", "-", "-o", "bad.mlpackage")
    assert status == 1 and err.startswith("<stdin>:3:17: error: %xx is not defined")


# ---- build -o ------------------------------------------------------------------------------------

def test_build_refuses_its_own_input_and_suffixes_it_does_not_write(tmp_path, capsys):
    source = tmp_path / "m.mil"
    source.write_text(HAND, encoding="utf-8")
    for output in ("m.mil", "m.txt", "other.mil", "noext"):
        status, _, err = command(capsys, "build", str(source), "-o", str(tmp_path / output))
        assert status == 1 and "error: build writes a .mlpackage, a .mlmodel or a .pb" in err
    assert sorted(os.listdir(tmp_path)) == ["m.mil"] and source.read_text() == HAND
    package = tmp_path / "m.mlpackage"
    assert command(capsys, "build", str(source), "-o", str(package))[0] == 0
    before = sorted(os.path.join(d, f) for d, _, fs in os.walk(package) for f in fs)
    status, _, err = command(capsys, "build", str(package), "-o", str(package))
    assert status == 1 and err.startswith(f"{package}: error: this is the input of this command")
    assert sorted(os.path.join(d, f) for d, _, fs in os.walk(package) for f in fs) == before


# ---- every error says error: ---------------------------------------------------------------------

def test_every_error_line_says_error(tmp_path, capsys):
    source = tmp_path / "m.mil"
    source.write_text(HAND.replace("%y = relu(x=%x)", '%w: (2, fp32) = const(val=(2, fp32)(blob(64)), name="w")\n'
                                   "    %y = relu(x=%x)"), encoding="utf-8")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("mine")
    (tmp_path / "empty").mkdir()
    failing = [
        ["print", str(tmp_path / "missing.mil")],
        ["check", "--weights", str(tmp_path / "nowhere"), str(source)],
        ["build", str(source), "-o", str(tmp_path / "x.txt")],
        ["build", str(source), "-o", str(tmp_path / "x.mlmodel")],       # blobs: no .mlmodel
        ["build", str(source), "-o", str(tmp_path / "x.mlpackage")],     # no weight file
        ["unpack", corpus_path("coremltools/torch_mlp", ".mlpackage"), str(tmp_path / "full")],
        ["pack", str(tmp_path / "empty"), "-o", str(tmp_path / "y.mlpackage")],
        ["print", "--dialect", "modelmil", "--weight-digests", str(source)],
        ["diff", str(source), str(tmp_path / "missing.mil")],
        ["infer", str(tmp_path / "missing.mil")],
    ]
    for args in failing:
        status, _, err = command(capsys, *args)
        assert status in (1, 2), args
        first = err.split("\n")[0]
        assert re.match(r"^\S.*?: error: \S", first) or first.startswith("error: "), (args, err)


# ---- the progress bar ----------------------------------------------------------------------------

class Terminal(io.StringIO):
    def isatty(self):
        return True


def percentages(out: str) -> list[int]:
    return [int(p) for p in re.findall(r"\]\s+(\d+)%", out)]


def test_a_stage_that_cannot_count_moves_with_time_and_never_ends_early():
    progress = Progress("build", stream=io.StringIO(), stages={"reading": 1, "checking": 1})
    progress.stage("reading", seconds=0.2)
    first = progress.fraction()
    time.sleep(0.1)
    middle = progress.fraction()
    time.sleep(0.3)
    assert 0 <= first < middle < 0.5 and 0.45 < progress.fraction() < 0.5   # never past its share
    progress.stage("checking", total=4)
    progress.advance(2)
    assert progress.fraction() == 0.75


@pytest.mark.parametrize("command_line", [["check"], ["build", "-o", "out.mlpackage"]], ids=lambda c: c[0])
def test_the_bar_moves_while_a_long_text_is_read(command_line, tmp_path, monkeypatch):
    ops = "".join(f"    %y{i}: (1, 2, fp32) = relu(x=%{'x' if i == 0 else f'y{i - 1}'}, name=\"y{i}\")\n"
                  for i in range(30000))
    (tmp_path / "long.mil").write_text(HAND.replace("    %y = relu(x=%x)\n", ops).replace("-> (%y)", "-> (%y29999)"))
    stream = Terminal()
    monkeypatch.setattr(miltext.progress, "DELAY", 0)
    monkeypatch.setattr(miltext.progress, "INTERVAL", 0.01)
    monkeypatch.setattr("sys.stderr", stream)
    monkeypatch.chdir(tmp_path)
    args = [command_line[0], "long.mil", *command_line[1:]]
    assert main(args) == 0
    seen = percentages(stream.getvalue())
    assert any(0 < p < 100 for p in seen), seen
    assert seen == sorted(seen)     # it never goes back
    assert f"{command_line[0]} [" in stream.getvalue() and stream.getvalue().endswith("\r\x1b[K")


def test_fmt_shows_a_bar_over_many_files_and_its_messages_wipe_it(tmp_path, monkeypatch):
    for i in range(30):
        (tmp_path / f"m{i}.mil").write_text(HAND.replace("relu(x=%x)", "relu(x=%x )"))
    stream = Terminal()
    monkeypatch.setattr(miltext.progress, "DELAY", 0)
    monkeypatch.setattr(miltext.progress, "INTERVAL", 0.001)
    monkeypatch.setattr("sys.stderr", stream)
    assert main(["fmt", str(tmp_path)]) == 0
    out = stream.getvalue()
    assert "fmt [" in out and any(0 < p < 100 for p in percentages(out))
    # each message starts on a line of its own, the bar wiped first, never after its text
    before = re.findall(r"(.?)reformatted /", out, re.S)
    assert len(before) == 30 and set(before) <= {"", "\n", "K"}, set(before)
    assert "miltext fmt: 30 files reformatted" in out
