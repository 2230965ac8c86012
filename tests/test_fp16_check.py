"""miltext fp16-check: the ops of an fp32 model that go wrong in fp16, first cause first, on
programs written here and on torch conversions (tests/run_cases, scripts/make_run_fixtures.py),
whose fp16 copy must compute exactly what coremltools' own fp16 conversion computes."""
import json
import os
import sys
import types

import numpy as np
import pytest

import miltext
from miltext.cli import main
from miltext.interpreter import Session
from miltext.interpreter.constants import Constants
from miltext.model.io import read_model
from miltext.numerics import fp16

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "run_cases")

# x (magnitude 50..100, squares below 65504) -> x*x -> sum of 1000 squares (millions: beyond fp16) -> ...
SUM_OF_SQUARES = """main[CoreML7](%x: (1, 1000, fp32)) {
  block0() {
    %sq = mul(x=%x, y=%x, name="square")
    %total = reduce_sum(x=%sq, axes=[1], keep_dims=true, name="sum_of_squares")
    %norm = sqrt(x=%total, name="norm")
    %y = real_div(x=%x, y=%norm, name="normalize")
  } -> (%y)
}
"""


def write(tmp_path, text, **arrays):
    model = tmp_path / "model.mil"
    model.write_text(text)
    args = []
    for name, value in arrays.items():
        np.save(tmp_path / f"{name}.npy", np.asarray(value, np.float32))
        args += ["-i", f"{name}={tmp_path / f'{name}.npy'}"]
    return str(model), args


def fp16_check(capsys, *argv):
    status = main(["fp16-check", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def squares_input():
    rng = np.random.default_rng(0)
    return rng.uniform(50, 100, (1, 1000)) * np.where(np.arange(1000) % 2, 1, -1)


def test_the_sum_of_squares_is_named_not_the_mul_before_it_nor_what_follows(tmp_path, capsys):
    model, args = write(tmp_path, SUM_OF_SQUARES, x=squares_input())
    status, out, err = fp16_check(capsys, model, *args, "--json")
    assert status == 1 and err == ""
    found = json.loads(out)["ops"]
    assert [(c["op"], c["type"], c["var"], c["line"], c["reason"]) for c in found] == \
        [("sum_of_squares", "reduce_sum", "total", 4, "overflow")]
    assert found[0]["max_abs_fp32"] > 65504 and found[0]["count"] == 1 and found[0]["size"] == 1
    # what follows only inherits the inf: listed under its cause
    assert [(c["op"], c["reason"]) for c in found[0]["consequences"]] == [("norm", "overflow"), ("normalize", "underflow")]


def test_the_text_report_places_the_cause_and_its_consequences(tmp_path, capsys):
    model, args = write(tmp_path, SUM_OF_SQUARES, x=squares_input())
    status, out, _ = fp16_check(capsys, model, *args)
    assert status == 1
    lines = out.splitlines()
    assert lines[0].startswith(f"{model}:4: %total = reduce_sum (sum_of_squares) overflows fp16")
    assert lines[1].strip() == '%total = reduce_sum(x=%sq, axes=[1], keep_dims=true, name="sum_of_squares")'
    assert "%norm (sqrt, line 5: overflow)" in lines[2] and "%y (real_div, line 6: underflow)" in lines[2]
    assert "square" not in out.replace("sum_of_squares", "")


def test_the_selector_is_python_that_keeps_exactly_the_causes_in_fp32(tmp_path, capsys, monkeypatch):
    model, args = write(tmp_path, SUM_OF_SQUARES, x=squares_input())
    status, out, _ = fp16_check(capsys, model, *args, "--emit-selector")
    assert status == 1
    made = {}
    transform = types.SimpleNamespace(FP16ComputePrecision=lambda op_selector: made.setdefault("selector", op_selector))
    monkeypatch.setitem(sys.modules, "coremltools", types.SimpleNamespace(transform=transform))
    scope = {}
    exec(compile(out, "selector.py", "exec"), scope)
    assert scope["FP32_OPS"] == {"sum_of_squares"}
    keeps = {name: made["selector"](types.SimpleNamespace(name=name))
             for name in ("square", "sum_of_squares", "norm", "normalize")}
    assert keeps == {"square": True, "sum_of_squares": False, "norm": True, "normalize": True}


def test_keep_checks_the_fix_and_shows_where_the_problem_moves(tmp_path, capsys):
    model, args = write(tmp_path, SUM_OF_SQUARES, x=squares_input())
    # the sum kept in fp32, sqrt reads it through a cast to fp16, as the converted model does
    status, out, _ = fp16_check(capsys, model, *args, "--keep", "sum_of_squares", "--json")
    assert status == 1 and [c["op"] for c in json.loads(out)["ops"]] == ["norm"]
    status, out, _ = fp16_check(capsys, model, *args, "--keep", "sum_of_squares,norm")
    assert status == 0 and "every op stays within" in out
    status, out, _ = fp16_check(capsys, model, *args, "--keep", "sum_of_squares,norm", "--emit-selector")
    assert status == 0 and "'norm',\n    'sum_of_squares'," in out


def test_inf_minus_inf_is_a_nan_listed_under_the_overflows_that_made_it(tmp_path, capsys):
    text = """main[CoreML7](%x: (4, fp32), %z: (4, fp32)) {
  block0() {
    %a = mul(x=%x, y=%x, name="a")
    %b = mul(x=%z, y=%z, name="b")
    %d = sub(x=%a, y=%b, name="d")
    %y = add(x=%d, y=1.0, name="y")
  } -> (%y)
}
"""
    model, args = write(tmp_path, text, x=[300, 400, 500, 600], z=[299, 399, 499, 599])
    status, out, _ = fp16_check(capsys, model, *args, "--json")
    found = json.loads(out)["ops"]
    assert status == 1 and [(c["op"], c["reason"]) for c in found] == [("a", "overflow"), ("b", "overflow")]
    for cause in found:     # d is NaN in fp16 (inf - inf), finite in fp32: a consequence of both
        assert [(c["op"], c["reason"], c["count"]) for c in cause["consequences"]] == [("d", "nan", 4), ("y", "nan", 4)]


def test_exp_of_a_large_negative_underflows(tmp_path, capsys):
    text = """main[CoreML7](%x: (3, fp32)) {
  block0() {
    %e = exp(x=%x, name="e")
    %y = mul(x=%e, y=1000000.0, name="y")
  } -> (%y)
}
"""
    model, args = write(tmp_path, text, x=[-20, -21, -22])
    status, out, _ = fp16_check(capsys, model, *args, "--json")
    found = json.loads(out)["ops"]
    assert status == 1 and [(c["op"], c["type"], c["reason"], c["count"]) for c in found] == [("e", "exp", "underflow", 3)]
    assert 0 < found[0]["max_abs_fp32"] < 1e-8 and found[0]["max_abs_fp16"] == 0
    # the op scaling the zeros back up inherits them: its 2e-3 is 0 in fp16
    assert [c["op"] for c in found[0]["consequences"]] == ["y"]


def test_cancellation_beyond_the_budget_names_the_subtraction_not_the_add(tmp_path, capsys):
    text = """main[CoreML7](%x: (4, fp32)) {
  block0() {
    %big = add(x=%x, y=1000.0, name="shift")
    %y = sub(x=%big, y=1000.0, name="unshift")
  } -> (%y)
}
"""
    model, args = write(tmp_path, text, x=[1.1, 1.2, 1.3, 10.0])
    status, out, _ = fp16_check(capsys, model, *args, "--json")
    found = json.loads(out)["ops"]
    assert status == 1 and [(c["op"], c["reason"]) for c in found] == [("unshift", "error")]
    assert 0.01 < found[0]["max_error"] < 0.05
    status, _, _ = fp16_check(capsys, model, *args, "--budget", "0.05")
    assert status == 0


@pytest.mark.parametrize("name", ["mlp", "transformer"])
def test_the_fp16_copy_computes_what_coremltools_fp16_conversion_does(name):
    """The same torch model converted in fp32 and in fp16: the fp32 one made fp16 here gives
    the fp16 conversion's outputs bit for bit (the casts sit where the pass puts them)."""
    m32 = read_model(os.path.join(CASES, f"{name}_fp32.mlpackage"))
    m16 = read_model(os.path.join(CASES, f"{name}_fp16.mlpackage"))
    data = np.load(os.path.join(CASES, f"{name}_fp32.npz"))
    inputs = {k[3:]: data[k] for k in data.files if k.startswith("in_")}
    before = miltext.dumps(m32.program)
    with Constants(m32.program, m32.folder) as constants:
        copy, moved, _ = fp16.fp16_program(m32.program, lambda op, fn: constants.dense([op], op.outputs[0].name, fn))
    assert moved > 5 and miltext.dumps(m32.program) == before      # a copy: the model is as it was
    mine = Session(copy, m32.folder).run(inputs)
    theirs = Session(m16.program, m16.folder).run(inputs)
    assert set(mine) == set(theirs)
    for key in mine:
        assert mine[key].dtype == theirs[key].dtype == np.float16
        assert np.array_equal(mine[key], theirs[key])


@pytest.mark.parametrize("name", ["mlp", "cnn", "transformer", "lstm"])
def test_converted_models_that_fp16_suits_are_clean(tmp_path, capsys, name):
    data = np.load(os.path.join(CASES, f"{name}_fp32.npz"))
    args = []
    for key in (k for k in data.files if k.startswith("in_")):
        np.save(tmp_path / f"{key}.npy", data[key])
        args += ["-i", f"{key[3:]}={tmp_path / f'{key}.npy'}"]
    status, out, err = fp16_check(capsys, os.path.join(CASES, f"{name}_fp32.mlpackage"), *args)
    assert (status, err) == (0, "") and "every op stays within" in out


def test_bad_input_is_said_plainly_with_status_2(tmp_path, capsys):
    model, args = write(tmp_path, SUM_OF_SQUARES, x=squares_input())
    status, _, err = fp16_check(capsys, model)
    assert status == 2 and "error: input %x is not given" in err and "Traceback" not in err
    status, _, err = fp16_check(capsys, model, "-i", f"z={tmp_path / 'x.npy'}")
    assert status == 2 and "has no input named z" in err
    status, _, err = fp16_check(capsys, model, *args, "--keep", "nope")
    assert status == 2 and "no op named nope" in err
    data = np.load(os.path.join(CASES, "mlp_fp16.npz"))
    np.save(tmp_path / "in.npy", data["in_x0"])
    status, _, err = fp16_check(capsys, os.path.join(CASES, "mlp_fp16.mlpackage"), "-i", f"x0={tmp_path / 'in.npy'}")
    assert status == 2 and "no op computes in fp32" in err
    with pytest.raises(SystemExit) as e:
        main(["fp16-check", model, *args, "--budget", "2"])
    assert e.value.code == 2


NUMERICS = os.path.join(HERE, "corpus", "numerics")     # scripts/make_numerics_fixtures.py


def test_a_torch_sum_of_squares_names_its_reduce_sum(capsys):
    x = os.path.join(NUMERICS, "sumsq_x.npy")
    status, out, _ = fp16_check(capsys, os.path.join(NUMERICS, "sumsq_fp32.mlpackage"), "-i", f"x={x}", "--json")
    found = json.loads(out)["ops"]
    assert status == 1 and [c["type"] for c in found] == ["reduce_sum"]
    assert found[0]["reason"] == "overflow" and np.max(np.load(x).astype(np.float64) ** 2) < 65504
    assert "mul" not in [c["type"] for c in found[0]["consequences"]]     # before it: fine
    status, out, _ = fp16_check(capsys, os.path.join(NUMERICS, "sumsq_fp32.mlpackage"), "-i", f"x={x}", "--emit-selector")
    scope = {}
    exec(compile(out.replace("import coremltools as ct", "ct = None").split("compute_precision =")[0], "s.py", "exec"), scope)
    assert scope["FP32_OPS"] == {found[0]["op"]}


def test_a_model_with_a_while_loop_is_checked_pass_by_pass(capsys):
    x = os.path.join(NUMERICS, "loop_x.npy")
    status, out, err = fp16_check(capsys, os.path.join(NUMERICS, "loop.mlpackage"), "-i", f"x={x}")
    assert (status, err) == (0, "") and "every op stays within" in out
