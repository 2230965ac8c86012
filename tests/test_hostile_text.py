"""Malformed text and failing disks: every one a located miltext error (or a clear one naming
the file), never "internal error", and never a file lost or half-written."""
import errno
import os
import tempfile

import numpy as np
import pytest

import miltext
from miltext import files
from miltext.cli import main

HEAD = "main[CoreML7](%x: (2, fp32)) {\n  block0() {\n"
TAIL = "  } -> (%y)\n}\n"
MANY_DIGITS = "9" * 5000

# (the op line, the message, the column of the caret) - each once as the plain op line the fast
# path reads, and once with an attribute that sends it the long way.
CASES = {
    "negative dim": ('%y: (-2, fp32) = relu(x=%x, name="y")', "a dimension cannot be negative (-2)", 10),
    "dim of 2^64": ('%y: (18446744073709551616, fp32) = relu(x=%x, name="y")', "a dimension must be below 2^64", 9),
    "5000-digit int": (f'%y: (2, fp32) = add(x=%x, y={MANY_DIGITS}, name="y")', "an integer of 5,000 digits is out of range", 33),
    "5000-digit int in a list": (f'%y: (2, fp32) = add(x=%x, y=[1, {MANY_DIGITS}], name="y")',
                                 "an integer of 5,000 digits is out of range", 33),
}


@pytest.mark.parametrize("way", ["plain", "long"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_literals_and_types_are_located_errors(case, way, tmp_path, capsys):
    line, message, column = CASES[case]
    if way == "long":
        line = line.replace(', name="y")', ', name="y")[doc="d"]')
    path = tmp_path / "m.mil"
    path.write_text(HEAD + "    " + line + "\n" + TAIL)
    with pytest.raises(miltext.ParseError) as e:
        miltext.load(path)
    assert e.value.message.startswith(message)
    assert (e.value.line, e.value.column) == (3, column)
    for command in ("print", "check", "infer"):
        assert main([command, str(path)]) == 1
        out = capsys.readouterr()
        assert message in out.out + out.err and "internal error" not in out.err


@pytest.mark.parametrize("axes", ["[inf]", "[nan]", "[1.5]"])
def test_an_axis_that_is_no_integer_is_an_error_of_the_op(axes, tmp_path, capsys):
    path = tmp_path / "m.mil"
    path.write_text(HEAD + f"    %y = reduce_sum(x=%x, axes={axes})\n" + TAIL)
    assert main(["infer", str(path)]) == 1
    assert "m.mil:3:5: error: reduce_sum: input 'axes' must hold integers" in capsys.readouterr().err
    assert main(["build", str(path), "-o", str(tmp_path / "m.mlpackage")]) == 1   # check's finding
    assert "m.mil:3:27: error: input 'axes' of reduce_sum is (1, fp32)" in capsys.readouterr().err
    assert not (tmp_path / "m.mlpackage").exists()


def test_build_refuses_to_overwrite_its_input(tmp_path, capsys):
    source = tmp_path / "m.mil"
    text = HEAD + '    %y: (2, fp32) = relu(x=%x, name="y")\n' + TAIL
    source.write_text(text)
    for output in ("m.mil", "m.txt"):
        assert main(["build", str(source), "-o", str(tmp_path / output)]) == 1
    err = capsys.readouterr().err
    assert "build writes a .mlpackage, a .mlmodel or a .pb" in err
    assert source.read_text() == text
    folder = tmp_path / "unpacked"
    folder.mkdir()
    (folder / "model.mil").write_text(text)
    assert main(["pack", str(folder), "-o", str(folder)]) == 1
    assert "this is the input of this command" in capsys.readouterr().err
    assert (folder / "model.mil").read_text() == text


def test_fmt_exits_2_when_it_cannot_write_and_leaves_the_file(tmp_path, monkeypatch, capsys):
    path = tmp_path / "m.mil"
    text = HEAD + '    %y: (2, fp32) = relu(x=%x,   name="y")\n' + TAIL
    path.write_text(text)

    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(files, "write_atomic", disk_full)
    assert main(["fmt", str(path)]) == 2
    assert "m.mil: error: cannot write: No space left on device" in capsys.readouterr().err
    assert path.read_text() == text


def test_a_full_disk_names_the_file_being_written_not_the_temporary_one(tmp_path, monkeypatch):
    target = tmp_path / "out.pb"

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    class Failing:
        def __init__(self, f):
            self.f = f

        def __getattr__(self, name):
            return full if name == "write" else getattr(self.f, name)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.f.close()
    real_fdopen = os.fdopen
    monkeypatch.setattr(os, "fdopen", lambda *a, **k: Failing(real_fdopen(*a, **k)))
    with pytest.raises(OSError) as e:
        files.write_atomic(target, b"data")
    assert e.value.filename == str(target) and "No space left" in str(e.value)
    assert os.listdir(tmp_path) == []


def test_a_read_only_folder_names_the_target(tmp_path, monkeypatch):
    def denied(*args, dir=None, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied", os.path.join(dir, ".miltext-1-x.tmp"))
    monkeypatch.setattr(tempfile, "mkstemp", denied)
    monkeypatch.setattr(tempfile, "mkdtemp", denied)
    with pytest.raises(PermissionError) as e:
        files.write_atomic(tmp_path / "out.pb", b"data")
    assert e.value.filename == str(tmp_path / "out.pb")
    with pytest.raises(PermissionError) as e:
        with files.atomic_folder(tmp_path / "m.mlpackage", ("Manifest.json",)):
            pass
    assert e.value.filename == str(tmp_path / "m.mlpackage")


def test_a_dtype_coremltools_lacks_is_said_where_its_inference_is_asked(tmp_path, capsys):
    """bf16 inputs to an op only coremltools can type: coremltools has no bf16."""
    path = tmp_path / "m.mil"
    path.write_text("main[CoreML8](%x: (2, 3, bf16)) {\n  block0() {\n"
                    "    %y = batch_to_space(x=%x, block_shape=[1, 1], crops=[[0, 0], [0, 0]])\n  } -> (%y)\n}\n")
    assert main(["infer", str(path)]) == 1
    err = capsys.readouterr().err
    assert "m.mil:3:5: error: cannot infer the output types of batch_to_space: coremltools has no bf16 type" in err


@pytest.mark.parametrize("outputs", ["%y", "%y, %w"])       # the const folded into conv, or a step of its own
def test_a_const_whose_value_does_not_fit_its_type_is_said_at_the_const_when_run(outputs, tmp_path, capsys):
    """A const's value of another shape than its output declares: `run` says what `check`
    says of it, at the const (it ran on, and conv failed with "tuple index out of range")."""
    path = tmp_path / "m.mil"
    path.write_text("main[CoreML7](%x: (1, 4, 8, 8, fp32)) {\n  block0() {\n"
                    '    %w: (4, 4, 3, 3, fp32) = const(val=fp32(0.01), name="w0")\n'
                    '    %y = conv(x=%x, weight=%w, name="c")\n'
                    f"  }} -> ({outputs})\n}}\n")
    said = "the value is (fp32), but %w is declared (4, 4, 3, 3, fp32)"
    assert main(["check", str(path)]) == 1
    assert said in capsys.readouterr().out
    np.save(tmp_path / "x.npy", np.zeros((1, 4, 8, 8), np.float32))
    assert main(["run", str(path), "-i", f"x={tmp_path / 'x.npy'}"]) == 1
    err = capsys.readouterr().err
    assert f"m.mil:3:5: error: const: {said}" in err and "internal error" not in err and "index" not in err
