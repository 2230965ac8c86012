"""`check` on real conversions: programs written with coremltools' builder (tests/
builder_programs.py), converted by `coremltools.convert` as they are, fp16, with palettized and
with quantized weights, check with no error, in full form and in the shorthand (output types
and names left out, so every type comes from miltext's inference); and a mistake put in each
is found."""
import logging
import re
import warnings

import pytest

import miltext

ct = pytest.importorskip("coremltools")

from support.builder_programs import programs  # noqa: E402

PROGRAMS = programs()


def convert(name, compression, folder):
    warnings.filterwarnings("ignore")
    logging.getLogger("coremltools").setLevel(logging.ERROR)
    prog, target = PROGRAMS[name]
    model = ct.convert(prog, convert_to="mlprogram", minimum_deployment_target=target,
                       compute_precision=ct.precision.FLOAT32 if name == "lstm" else ct.precision.FLOAT16,
                       skip_model_load=True)
    opt = ct.optimize.coreml
    if compression == "palettized":
        model = opt.palettize_weights(model, opt.OptimizationConfig(
            global_config=opt.OpPalettizerConfig(mode="uniform", nbits=4, weight_threshold=16)))
    elif compression == "quantized":
        model = opt.linear_quantize_weights(model, opt.OptimizationConfig(
            global_config=opt.OpLinearQuantizerConfig(weight_threshold=16)))
    path = str(folder / f"{name}.mlpackage")
    model.save(path)
    from miltext.cli.check_cmd import check_file
    return check_file(path, None)


_OP = re.compile(r"(\s*)(%.*?) = (\w+)\((.*)\)$")
_TYPED = re.compile(r"(%\w+): \([^()]*\)(\(\w+\))?")


def shorthand(text: str) -> str:
    """Every op but const without its output types and its name."""
    out = []
    for line in text.split("\n"):
        found = _OP.match(line)
        if found and found.group(3) != "const" and found.group(2).startswith("%"):
            outputs = _TYPED.sub(r"\1", found.group(2))
            arguments = re.sub(r', name="[^"]*"', "", found.group(4))
            line = f"{found.group(1)}{outputs} = {found.group(3)}({arguments})"
        out.append(line)
    return "\n".join(out)


def errors(text):
    return [d for d in miltext.check(miltext.loads(text), source=text) if d.is_error]


CASES = [(name, c) for name in PROGRAMS for c in (None, "palettized", "quantized")]


@pytest.mark.slow
@pytest.mark.parametrize("name,compression", CASES, ids=[f"{n}-{c or 'plain'}" for n, c in CASES])
def test_real_conversion_checks_without_errors_in_full_and_in_shorthand(name, compression, tmp_path):
    diagnostics, text = convert(name, compression, tmp_path)
    assert [d for d in diagnostics if d.is_error] == []
    body = miltext.dumps(miltext.loads(text))
    short = shorthand(body)
    assert short.count(": (") < body.count(": (")      # the shorthand did leave types out
    assert errors(short) == []


def test_a_mistake_in_a_real_shorthand_program_is_found(tmp_path):
    _, text = convert("mlp", None, tmp_path)
    short = shorthand(miltext.dumps(miltext.loads(text)))
    line = next(x for x in short.split("\n") if "= linear(" in x)
    broken = short.replace(line, line.replace("= linear(x=%", "= linear(x=%nowhere_"), 1)
    assert broken != short
    found = errors(broken)
    assert [d.rule for d in found] == ["undefined-name"]
    relu = next(x for x in short.split("\n") if "= relu(" in x)
    broken = short.replace(relu, relu.replace("relu(", "reluu("), 1)
    assert [d.rule for d in errors(broken)] == ["unknown-op"]
