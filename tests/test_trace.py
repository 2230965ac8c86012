"""`miltext run --trace`: every op's outputs written as the run goes, by var name, by pass inside
a while_loop; selected by op type or var; the Python API's callback gives the same."""
import os

import numpy as np

import miltext
from miltext.cli import main
from miltext.model.io import read_model
from miltext.numerics import trace

NUMERICS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "numerics")
LOOP = os.path.join(NUMERICS, "loop.mlpackage")
X = np.load(os.path.join(NUMERICS, "loop_x.npy"))


def test_a_while_loop_is_traced_by_iteration(tmp_path):
    out = tmp_path / "t.npz"
    assert main(["run", LOOP, "-i", f"x={NUMERICS}/loop_x.npy", "--trace", str(out)]) == 0
    values = np.load(out)
    # three passes of the body (x * 1.5 each), four of the condition
    assert [k for k in values if k.startswith("go#")] == ["go#0", "go#1", "go#2", "go#3"]
    assert values["go#3"] == False and values["go#2"] == True      # noqa: E712
    scaled = [k for k in values if k.startswith("scaled") and "#" in k and not k.endswith("fp32#0")]
    for i in range(3):
        body = next(k for k in values if k.startswith("scaled") and k.endswith(f"#{i}") and values[k].dtype == np.float16)
        np.testing.assert_allclose(values[body], X * 1.5 ** (i + 1), rtol=1e-3)
    assert scaled and "out" in values and "start" not in values      # consts only when asked


def test_the_api_callback_gives_what_the_file_holds(tmp_path):
    out = tmp_path / "trace"
    assert main(["run", LOOP, "-i", f"x={NUMERICS}/loop_x.npy", "--trace", str(out)]) == 0
    model = read_model(LOOP)
    seen = {}
    with miltext.Session(model.program, model.folder) as session:
        trace(session, {"x": X}, lambda key, value, op: seen.setdefault(key, value.copy()))
    written = __import__("json").load(open(out / "index.json"))["keys"]
    assert list(seen) == list(written)
    for key, file in written.items():
        np.testing.assert_array_equal(np.load(out / file), seen[key])


def test_selection_by_op_type_and_var(tmp_path):
    out = tmp_path / "sel.npz"
    assert main(["run", LOOP, "-i", f"x={NUMERICS}/loop_x.npy", "--trace", str(out),
                 "--trace-ops", "less,const", "--trace-vars", "out"]) == 0
    keys = set(np.load(out))
    assert {"go#0", "go#3", "out", "start"} <= keys
    assert "next_i#0" not in keys and "scaled_cast_fp16#0" not in keys


def test_a_trace_never_replaces_what_miltext_did_not_write(tmp_path, capsys):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_bytes(b"keep me")
    assert main(["run", LOOP, "-i", f"x={NUMERICS}/loop_x.npy", "--trace", str(folder)]) == 1
    assert "holds notes.txt" in capsys.readouterr().err
    assert (folder / "notes.txt").read_bytes() == b"keep me" and os.listdir(folder) == ["notes.txt"]
