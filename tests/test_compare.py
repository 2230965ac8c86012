"""`miltext compare`: two real torch conversions (tests/corpus/numerics, made by
scripts/make_numerics_fixtures.py) run side by side, the first divergent op found, and bad
input refused with a plain error."""
import json
import os

import numpy as np

from miltext.cli import main

NUMERICS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "numerics")


def model(name):
    return os.path.join(NUMERICS, f"{name}.mlpackage")


def x(name):
    return f"x={os.path.join(NUMERICS, name + '_x.npy')}"


def compare(capsys, *args):
    status = main(["compare", *args, "--json"])
    captured = capsys.readouterr()
    return status, (json.loads(captured.out) if captured.out else None), captured.err


def test_an_fp16_overflow_is_named_at_the_sum_of_squares(capsys):
    status, report, _ = compare(capsys, model("sumsq_fp32"), model("sumsq_fp16"), "-i", x("sumsq"))
    assert status == 1
    first = report["first_divergence"]
    assert first["a"]["type"] == "reduce_sum" and first["b"]["type"] == "reduce_sum"
    assert first["a"]["var"] == "var_7" and first["b"]["var"] == "var_7_cast_fp16"
    assert first["nonfinite"]["b"]["inf"] == 1 and first["nonfinite"]["a"] == {"nan": 0, "inf": 0}
    assert first["max_abs"] == "inf" and first["a"]["line"] > 0 and "reduce_sum(" in first["a"]["text"]
    # the mul before it was paired and stayed within fp16's tolerance: its squares are below 65504
    squares = next(p for p in report["pairs"] if p["a"]["type"] == "mul")
    assert squares["outside"] == 0 and 0 < squares["max_abs"] < 65504 * 1e-3
    assert report["outputs"]["var_11"]["within"] is False
    # every op pairs across the fp16 renames; what follows the sum inherits its inf
    assert not report["only_a"] and not report["only_b"]
    assert {p["a"]["type"] for p in report["pairs"] if p["outside"]} == {"reduce_sum", "sqrt", "add"}


def test_a_changed_conv_weight_is_named_on_both_sides_across_renames(capsys):
    status, report, _ = compare(capsys, model("cnn_a"), model("cnn_b"), "-i", x("cnn"))
    assert status == 1
    first = report["first_divergence"]
    assert (first["a"]["var"], first["b"]["var"]) == ("conv2_weight", "mixer_weight")
    assert first["a"]["type"] == first["b"]["type"] == "const"
    assert abs(first["max_rel"] - 0.01) < 2e-4      # the weight is 1 % larger
    assert not report["only_a"] and not report["only_b"]


def test_an_int8_linear_is_named(capsys):
    status, report, _ = compare(capsys, model("mlp"), model("mlp_int8"), "-i", x("mlp"))
    assert status == 1
    first = report["first_divergence"]
    assert first["a"]["op"] == first["b"]["op"] == "linear_0" and first["a"]["type"] == "linear"
    assert [p["type"] for p in report["only_b"]] == ["constexpr_affine_dequantize"]


def test_two_conversions_that_agree_exit_0(capsys):
    status, report, _ = compare(capsys, model("cnn_a"), model("cnn_same"), "-i", x("cnn"))
    assert status == 0 and report["first_divergence"] is None
    assert all(p["outside"] == 0 for p in report["pairs"]) and report["outputs"]["var_37"]["max_abs"] == 0


def test_the_text_report_places_both_sides(capsys):
    assert main(["compare", model("cnn_a"), model("cnn_b"), "-i", x("cnn")]) == 1
    out = capsys.readouterr().out
    assert out.startswith("first divergence: %conv2_weight")
    assert f"`miltext print {model('cnn_b')}`:17: %mixer_weight = const" in out


def test_against_values_captured_elsewhere(tmp_path, capsys):
    trace = tmp_path / "mlp.npz"
    assert main(["run", model("mlp"), "-i", x("mlp"), "--trace", str(trace)]) == 0
    capsys.readouterr()
    status, report, _ = compare(capsys, model("mlp_int8"), "--against", str(trace), "-i", x("mlp"))
    assert status == 1 and report["first_divergence"]["a"]["op"] == "linear_0"
    status, report, _ = compare(capsys, model("mlp"), "--against", str(trace), "-i", x("mlp"))
    assert status == 0 and report["first_divergence"] is None and report["outputs"]["var_10"]["max_abs"] == 0


def test_bad_input_is_a_plain_error(tmp_path, capsys):
    np.savez(tmp_path / "other.npz", foo=np.ones(3, np.float32), bar=np.zeros(2, np.float32))
    status, _, err = compare(capsys, model("mlp"), "--against", str(tmp_path / "other.npz"), "-i", x("mlp"))
    assert status == 2 and "none of its arrays (bar, foo) is named after a var" in err
    bad = dict(np.load(tmp_path / "other.npz"))
    np.savez(tmp_path / "nan.npz", var_10=np.full((1, 8), np.nan, np.float32))
    status, _, err = compare(capsys, model("mlp"), "--against", str(tmp_path / "nan.npz"), "-i", x("mlp"))
    assert status == 2 and "nan.npz: error: var_10 holds NaN or infinite values" in err
    status, _, err = compare(capsys, model("mlp"), model("mlp_int8"), "-i", "y=[1.0]")
    assert status == 2 and "no input named y" in err and "Traceback" not in err
    status, _, err = compare(capsys, model("mlp"), model("mlp_int8"), "-i", "x=[[1.0, 2.0]]")
    assert status == 2 and "x" in err and "Traceback" not in err
    assert bad["foo"].shape == (3,)      # the reference file is read, never written
