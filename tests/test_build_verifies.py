"""`build` and `pack` refuse what `check` refuses: the same diagnostics, located, and nothing
written; `--no-verify` writes anyway. What `build` does write opens in coremltools and its MIL
loader loads it: every corpus model, unpacked to text and built back, and every corpus program
built from its text (the examples are tested so in test_examples.py)."""
import os
import re
import shutil

import pytest

from miltext.cli import main
from support.build_cases import BROKEN, line_of, text_of
from support.corpus import corpus_files

COREMLTOOLS_WORDS = ("In op, of type", "not registered", "Mismatch between", "Required input",
                     "No available version", "Traceback")


def command(capsys, *args) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


@pytest.mark.parametrize("name", list(BROKEN))
def test_build_refuses_what_check_refuses_with_checks_diagnostics(name, tmp_path, capsys):
    source = tmp_path / f"{name}.mil"
    source.write_text(text_of(name), encoding="utf-8")
    status, report, summary = command(capsys, "check", str(source))
    assert status == 1      # what build refuses, check calls an error: a CI step gated on check agrees
    output = tmp_path / "out.mlpackage"
    status, out, err = command(capsys, "build", str(source), "-o", str(output))
    assert (status, out) == (1, "") and not output.exists() and os.listdir(tmp_path) == [source.name]
    assert err == report + summary.rstrip("\n") + "; nothing written (--no-verify writes it anyway)\n"
    head, shown, caret = err.split("\n")[:3]
    assert re.match(rf"{re.escape(str(source))}:{line_of(name)}:\d+: error: ", head), head
    column = int(head.split(":")[2])
    assert shown == text_of(name).split("\n")[line_of(name) - 1] and caret == " " * (column - 1) + "^"
    assert not any(words in err for words in COREMLTOOLS_WORDS), err


def test_pack_refuses_too_and_no_verify_writes_anyway(tmp_path, capsys):
    folder = tmp_path / "unpacked"
    folder.mkdir()
    (folder / "model.mil").write_text(text_of("model_section"), encoding="utf-8")
    output = tmp_path / "out.mlpackage"
    status, _, err = command(capsys, "pack", str(folder), "-o", str(output))
    assert status == 1 and not output.exists()
    assert err.startswith(f"{folder / 'model.mil'}:2:3: error: input %x is fp16 here, but fp32 in the program\n")
    status, _, err = command(capsys, "pack", "--no-verify", str(folder), "-o", str(output))
    assert (status, err) == (0, "") and output.is_dir()
    status, _, err = command(capsys, "build", "--no-verify", str(folder / "model.mil"), "-o", str(tmp_path / "b.pb"))
    assert (status, err) == (0, "") and (tmp_path / "b.pb").is_file()


def test_build_verifies_blobs_against_the_weights_beside_the_text(tmp_path, capsys):
    example = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples", "mlp")
    text = open(os.path.join(example, "model.mil"), encoding="utf-8").read()
    first_blob = re.search(r"\((\d+(, \d+)*), fp16\)\(blob", text)
    assert first_blob
    broken = text.replace(first_blob.group(0), first_blob.group(0).replace("fp16)(blob", "fp32)(blob"), 1)
    (tmp_path / "weights").mkdir()
    for name in os.listdir(os.path.join(example, "weights")):
        with open(os.path.join(example, "weights", name), "rb") as f:
            (tmp_path / "weights" / name).write_bytes(f.read())
    (tmp_path / "model.mil").write_text(broken, encoding="utf-8")
    status, out, _ = command(capsys, "check", str(tmp_path / "model.mil"))   # finds weights/ by itself
    assert status == 1 and "error: the blob at offset" in out and "holds fp16 data" in out
    status, _, err = command(capsys, "build", str(tmp_path / "model.mil"), "-o", str(tmp_path / "o.mlpackage"))
    assert status == 1 and err.startswith(out) and not (tmp_path / "o.mlpackage").exists()


def test_check_of_the_model_section_in_shorthand_matches_the_full_form(tmp_path, capsys):
    section = 'model(specificationVersion=8) {\n  input %x: (1, 2, fp32)\n  output %y: (1, 2, int32)\n}\n\n'
    head, tail = "main[CoreML7](%x: (1, 2, fp32)) {\n  block0() {\n", "  } -> (%y)\n}\n"
    texts = {"short.mil": "    %y = relu(x=%x)\n", "full.mil": '    %y: (1, 2, fp32) = relu(x=%x, name="y")\n'}
    for name, ops in texts.items():
        (tmp_path / name).write_text(section + head + ops + tail, encoding="utf-8")
        status, out, _ = command(capsys, "check", str(tmp_path / name))
        assert status == 1
        assert out.startswith(f"{tmp_path / name}:3:3: error: output %y is int32 here, but fp32 in the program\n")


# ---- what build writes, coremltools loads ------------------------------------------------------

def coremltools_loads(package: str) -> list:
    """The functions of the package's program, as coremltools' MIL loader reads it."""
    ct = pytest.importorskip("coremltools")
    from coremltools.converters.mil.frontend.milproto.load import load_mil_proto
    model = ct.models.MLModel(package, skip_model_load=True)
    spec = model.get_spec()
    return list(load_mil_proto(spec.mlProgram, spec.specificationVersion, model.weights_dir).functions)


@pytest.mark.parametrize("package", corpus_files("coremltools", ".mlpackage"), ids=os.path.basename)
def test_a_corpus_model_unpacked_and_built_back_loads_in_coremltools(package, tmp_path, capsys):
    pytest.importorskip("coremltools")
    assert command(capsys, "unpack", package, str(tmp_path / "text"))[0] == 0
    status, _, err = command(capsys, "build", str(tmp_path / "text" / "model.mil"), "-o", str(tmp_path / "m.mlpackage"))
    assert (status, err) == (0, "")
    assert coremltools_loads(str(tmp_path / "m.mlpackage"))


def loads_in_coremltools(program: str) -> bool:
    """Whether coremltools' MIL loader reads the corpus program as coremltools wrote it (one
    trips on its own value inference)."""
    from coremltools.converters.mil.frontend.milproto.load import load_mil_proto
    from coremltools.proto import MIL_pb2
    with open(program, "rb") as f:
        message = MIL_pb2.Program.FromString(f.read())
    try:
        load_mil_proto(message, 9, weights_of(program) or "")
    except Exception:
        return False
    return True


def weights_of(program: str) -> str | None:
    """The weights folder of the package the corpus program was saved in, if there is one."""
    folder = os.path.join(program[:-len(".pb")] + ".mlpackage", "Data", "com.apple.CoreML", "weights")
    return folder if os.path.isdir(folder) else None


def programs_with_their_weights() -> list[str]:
    """The corpus programs whose blob values have their weight file at hand."""
    def has_blobs(path):
        with open(path, "rb") as f:
            return b"@model_path" in f.read()
    return [p for p in corpus_files("coremltools", ".pb") if weights_of(p) or not has_blobs(p)]


@pytest.mark.parametrize("program", programs_with_their_weights(), ids=os.path.basename)
def test_a_corpus_program_built_from_its_text_loads_or_is_refused_at_a_line(program, tmp_path, capsys):
    """A program's text builds into a package coremltools loads, or build says, at a line,
    why no model can hold it (a bool input, several functions without a main...)."""
    pytest.importorskip("coremltools")
    status, text, _ = command(capsys, "print", program)
    assert status == 0
    if weights_of(program):
        shutil.copytree(weights_of(program), tmp_path / "weights")
    source = tmp_path / "p.mil"
    source.write_text(text, encoding="utf-8")
    status, _, err = command(capsys, "build", str(source), "-o", str(tmp_path / "m.mlpackage"))
    if status == 0:
        if loads_in_coremltools(program):    # (what coremltools cannot load as it saved it, aside)
            assert coremltools_loads(str(tmp_path / "m.mlpackage"))
    else:
        assert re.match(rf"{re.escape(str(source))}(:\d+:\d+)?: error: ", err), err
        assert not (tmp_path / "m.mlpackage").exists()


def test_the_readmes_mistake_gets_the_diagnostic_it_shows(tmp_path, monkeypatch, capsys):
    from support.docs import README, fenced_blocks
    blocks = fenced_blocks(README)
    (index, (_, _, source, mark)), = [(i, b) for i, b in enumerate(blocks) if b[3].startswith("mistake:")]
    name = mark.split(":", 1)[1].strip()
    shown = blocks[index + 1][2]
    command_line, expected = shown.split("\n", 1)
    assert command_line == f"$ miltext build {name} -o tiny.mlpackage"
    (tmp_path / name).write_text(source, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert command(capsys, "build", name, "-o", "tiny.mlpackage") == (1, "", expected)
    status, out, _ = command(capsys, "check", name)
    assert status == 1 and expected.startswith(out)
