"""The gallery in examples/: every example builds into an .mlpackage that coremltools opens and
loads, and the generated ones (scripts/make_examples.py) are canonical text that a build and an
unpack give back byte for byte."""
import glob
import os

import pytest

from miltext.cli import main as miltext_main
from miltext.model import unpack
from miltext.model.text import model_text, read_program_file
from support import goldens

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
HAND_WRITTEN = {"transformer_block.mil"}   # sugar and comments: not canonical, by design
PROGRAM_ONLY = {"control_flow.mil"}   # a bool input, which a model's description cannot have


def examples() -> list[str]:
    return sorted(glob.glob(os.path.join(EXAMPLES, "*.mil")) + glob.glob(os.path.join(EXAMPLES, "*", "model.mil")))


def name_of(path: str) -> str:
    return os.path.relpath(path, EXAMPLES)


def build(source: str, tmp_path, suffix=".mlpackage") -> str:
    out = str(tmp_path / ("out" + suffix))
    assert miltext_main(["build", source, "-o", out]) == 0
    return out


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def test_the_gallery_is_there_and_small():
    names = {name_of(p) for p in examples()}
    for name in ("mlp", "cnn", "transformer", "lstm", "gated_loop", "kv_cache", "int4", "palettized"):
        assert f"{name}/model.mil" in names and os.path.isfile(os.path.join(EXAMPLES, name, "weights", "weight.bin"))
    assert {"control_flow.mil", "while_loop.mil"} <= names
    size = sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(EXAMPLES) for f in files)
    assert size < 512 * 1024


def test_the_readme_lists_every_example():
    readme = read(os.path.join(EXAMPLES, "README.md")).decode("utf-8")
    for path in examples():
        name = name_of(path)
        entry = name if "/" not in name else name.split("/")[0] + "/"   # a folder: `mlp/`
        assert f"`{entry}`" in readme, name


@pytest.mark.parametrize("source", [p for p in examples() if name_of(p) not in HAND_WRITTEN], ids=name_of)
def test_example_is_canonical(source):
    goldens.compare(source, model_text(read_program_file(source)))


@pytest.mark.parametrize("source", [p for p in examples() if p.endswith("model.mil")], ids=name_of)
def test_example_folder_builds_and_unpacks_back(source, tmp_path):
    unpack(build(source, tmp_path), str(tmp_path / "again"))
    folder = os.path.dirname(source)
    assert read(str(tmp_path / "again" / "model.mil")) == read(source)
    assert read(str(tmp_path / "again" / "weights" / "weight.bin")) == read(os.path.join(folder, "weights", "weight.bin"))


@pytest.mark.parametrize("source", [p for p in examples() if name_of(p) not in PROGRAM_ONLY], ids=name_of)
def test_example_opens_in_coremltools(source, tmp_path):
    ct = pytest.importorskip("coremltools")
    from coremltools.converters.mil.frontend.milproto.load import load_mil_proto
    model = ct.models.MLModel(build(source, tmp_path), skip_model_load=True)
    spec = model.get_spec()
    prog = load_mil_proto(spec.mlProgram, spec.specificationVersion, model.weights_dir)
    assert list(prog.functions) == ["main"]


@pytest.mark.parametrize("source", [os.path.join(EXAMPLES, name) for name in sorted(PROGRAM_ONLY)], ids=name_of)
def test_program_example_loads_in_coremltools(source, tmp_path):
    pytest.importorskip("coremltools")
    import miltext
    program = miltext.Program.from_proto(read(build(source, tmp_path, ".pb")))
    assert list(miltext.to_coremltools(program).functions) == ["main"]


def test_the_readme_quotes_the_examples():
    """The diff and excerpts of the README's gallery section are real lines of the examples, so
    they cannot drift."""
    from support.docs import README, fenced_blocks
    lines = {line.strip() for path in examples() for line in read(path).decode("utf-8").splitlines()}
    readme = read(README).decode("utf-8").splitlines()
    start = readme.index("## A model change is a diff") + 1
    end = next(i for i in range(start, len(readme)) if readme[i].startswith("## ")) + 1
    quoted = [b for b in fenced_blocks(README) if start < b[0] < end and b[1] in ("diff", "text")]
    assert quoted
    for _, lang, body, _ in quoted:
        for line in body.splitlines():
            if lang == "diff" and line.startswith("@@"):
                continue
            if lang == "diff" and line.startswith("+"):
                line = line.replace("silu(", "relu(")   # the edit the README shows
            assert (line[1:] if lang == "diff" else line).strip() in lines, line
