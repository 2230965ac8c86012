"""`miltext check` as a user runs it, and `miltext.check` as a library user calls it: the
output format (`file:line:col: severity: message`, source line, caret, notes indented beneath),
source order over many files, JSON for tools, exit status 0/1/2, .pb input, weights."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings

import miltext
from support.cli import run
from support.corpus import CORPUS
from support.strategies import programs

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_cases")
CLEAN = ('main[CoreML7](%x: (2, fp32)) {\n  block0() {\n'
         '    %y: (2, fp32) = relu(x=%x, name="y")\n  } -> (%y)\n}\n')
BROKEN = ('main[CoreML7](%x: (2, fp32)) {\n  block0() {\n'
          '    %k: (fp32) = const(val=2.0, name="k")\n'
          '    %y: (2, fp32) = mul(x=%x, y=%w, name="y")\n'
          '    %y: (2, fp32) = relu(x=%y, name="y2")\n'
          '  } -> (%y)\n}\n')


def write(tmp_path, name, text):
    (tmp_path / name).write_text(text, encoding="utf-8")
    return name


def test_clean_program_says_nothing_and_exits_0(tmp_path):
    result = run("check", write(tmp_path, "ok.mil", CLEAN), cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_text_output_has_place_source_line_caret_and_notes(tmp_path):
    result = run("check", write(tmp_path, "bad.mil", BROKEN), cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout == (
        "bad.mil:4:33: error: %w is not defined\n"
        '    %y: (2, fp32) = mul(x=%x, y=%w, name="y")\n'
        "                                ^\n"
        "bad.mil:5:5: error: %y is defined twice in the same scope; later uses refer to this definition\n"
        '    %y: (2, fp32) = relu(x=%y, name="y2")\n'
        "    ^\n"
        "  bad.mil:4:5: note: first defined here\n"
        '      %y: (2, fp32) = mul(x=%x, y=%w, name="y")\n'
        "      ^\n")
    assert result.stderr == "2 errors, 0 warnings\n"


def test_warnings_alone_exit_0_but_an_unknown_op_is_an_error_as_for_build(tmp_path):
    custom = re.sub(r"relu\((.*?)\)", r"my_op(\1)[custom=True]", CLEAN)
    result = run("check", write(tmp_path, "warn.mil", custom), cwd=tmp_path)
    assert (result.returncode, result.stderr) == (0, "0 errors, 1 warning\n")
    assert "warning: my_op is a custom op" in result.stdout
    result = run("check", write(tmp_path, "bad.mil", CLEAN.replace("relu(", "my_op(")), cwd=tmp_path)
    assert result.returncode == 1
    assert "error: unknown op 'my_op'" in result.stdout


def test_many_files_many_diagnostics_in_source_order(tmp_path):
    names = ["names.mil", "structure.mil", "values.mil", "ops.mil"]
    for name in names:
        shutil.copy(os.path.join(CASES, name), tmp_path / name)
    result = run("check", *names, cwd=tmp_path)
    assert result.returncode == 1
    heads = re.findall(r"^([\w.]+):(\d+):(\d+): (error|warning): ", result.stdout, re.M)
    files = [h[0] for h in heads]
    assert files == sorted(files, key=names.index)  # file after file, as given
    for name in names:
        places = [(int(line), int(col)) for f, line, col, _ in heads if f == name]
        assert len(places) > 3 and places == sorted(places)


def test_json_output_for_tools(tmp_path):
    result = run("check", "--format", "json", write(tmp_path, "bad.mil", BROKEN), cwd=tmp_path)
    assert result.returncode == 1
    found = json.loads(result.stdout)
    assert [(d["severity"], d["line"], d["column"], d["rule"]) for d in found] == [
        ("error", 4, 33, "undefined-name"), ("error", 5, 5, "redefinition")]
    assert found[0]["file"] == "bad.mil" and found[0]["message"] == "%w is not defined"
    assert found[1]["notes"] == [{"file": "bad.mil", "line": 4, "column": 5, "severity": "note",
                                  "message": "first defined here"}]


def test_a_file_that_does_not_parse_gives_its_syntax_errors_and_the_others_are_checked(tmp_path):
    write(tmp_path, "broken.mil", CLEAN.replace("x=%x", "x=%x name"))
    write(tmp_path, "bad.mil", BROKEN)
    result = run("check", "--format", "json", "broken.mil", "bad.mil", cwd=tmp_path)
    assert result.returncode == 1
    found = json.loads(result.stdout)
    assert [(d["file"], d["rule"]) for d in found] == [
        ("broken.mil", "syntax"), ("bad.mil", "undefined-name"), ("bad.mil", "redefinition")]


def test_a_missing_file_is_an_error_not_a_traceback(tmp_path):
    result = run("check", "nowhere.mil", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith("nowhere.mil: error: cannot read")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [[], ["--format", "xml", "x.mil"], ["--weights", "no/such/dir", "x.mil"]])
def test_wrong_command_line_exits_2(args, tmp_path):
    write(tmp_path, "x.mil", CLEAN)
    result = run("check", *args, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.strip()


def test_pb_is_checked_in_its_canonical_text(tmp_path):
    shutil.copy(os.path.join(CORPUS, "edge", "odd_names_and_strings.pb"), tmp_path / "odd.pb")
    result = run("check", "odd.pb", cwd=tmp_path)
    assert result.returncode == 0, result.stdout
    canonical = miltext.dumps(miltext.Program.from_proto((tmp_path / "odd.pb").read_bytes())).split("\n")
    first = re.match(r"odd.pb:(\d+):(\d+): warning: (.*)\n(.*)\n", result.stdout)
    assert first.group(4) == canonical[int(first.group(1)) - 1]


def test_weights_of_an_mlpackage_are_checked(tmp_path):
    name = "coremltools/constexpr_ios18_lut"
    shutil.copy(os.path.join(CORPUS, name + ".pb"), tmp_path / "model.pb")
    shutil.copytree(os.path.join(CORPUS, name + ".mlpackage"), tmp_path / "model.mlpackage")
    assert run("check", "--weights", "model.mlpackage", "model.pb", cwd=tmp_path).returncode == 0
    weights = tmp_path / "model.mlpackage" / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    weights.write_bytes(weights.read_bytes()[:100])  # cut short: the blobs past it are gone
    result = run("check", "--weights", "model.mlpackage", "model.pb", cwd=tmp_path)
    assert result.returncode == 1 and "is past the end of weight.bin (100 bytes)" in result.stdout


def test_a_model_is_checked_in_the_text_print_shows_against_its_own_weights(tmp_path):
    shutil.copytree(os.path.join(CORPUS, "coremltools", "torch_mlp.mlpackage"), tmp_path / "m.mlpackage")
    assert run("check", "m.mlpackage", cwd=tmp_path).returncode == 0
    weights = tmp_path / "m.mlpackage" / "Data" / "com.apple.CoreML" / "weights" / "weight.bin"
    weights.write_bytes(weights.read_bytes()[:1000])
    result = run("check", "m.mlpackage", cwd=tmp_path)
    assert result.returncode == 1
    shown = run("print", "m.mlpackage", cwd=tmp_path).stdout.split("\n")
    found = re.findall(r"^m.mlpackage:(\d+):\d+: error: offset \d+ is past the end of weight.bin "
                       r"\(1000 bytes\)\n(.*)$", result.stdout, re.M)
    assert found and all(line == shown[int(number) - 1] for number, line in found)


# ---- the library ---------------------------------------------------------------------------

def test_import_stays_light():
    code = ("import sys, miltext; "
            "print(sorted(m for m in sys.modules if m.startswith(('miltext.checker', 'lark', 'google'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_check_returns_diagnostics_with_places_and_notes():
    program = miltext.loads(BROKEN, "bad.mil")
    error, twice = miltext.check(program, filename="bad.mil")
    assert (error.severity, error.file, error.line, error.column) == ("error", "bad.mil", 4, 5)  # the op
    assert error.message == "%w is not defined" and error.rule == "undefined-name"
    assert (twice.severity, twice.line, [(n.severity, n.line, n.column) for n in twice.notes]) == \
        ("error", 5, [("note", 4, 5)])
    exact, _ = miltext.check(program, source=BROKEN)
    assert (exact.line, exact.column, exact.file) == (4, 33, None)  # with the source: the %w itself


def test_check_of_a_program_read_from_a_proto_has_no_places():
    program = miltext.Program.from_proto(miltext.loads(BROKEN.replace("%w", "%k")).to_proto())
    [warning] = miltext.check(program)
    assert (warning.rule, warning.line, warning.column) == ("redefinition", None, None)


def test_strict_build_shares_the_scoping_of_check():
    """A while_loop's block inputs are local: using one after the loop is an error for both."""
    with open(os.path.join(CASES, "names.mil"), encoding="utf-8") as f:
        text = f.read()
    program = miltext.loads(text)
    loops = miltext.Program(functions={"loops": program.functions["loops"]})
    with pytest.raises(miltext.ProgramError, match="%lx is not defined"):
        loops.to_proto(strict=True)
    assert [d.rule for d in miltext.check(loops) if d.is_error] == ["out-of-scope"]


def test_ten_thousand_ops_check_quickly():
    lines = ["main[CoreML7](%x: (1, 64, fp32)) {", "  block0() {"]
    previous = "x"
    for i in range(5000):
        blob = f"(1, 64, fp32)(blob({64 + 320 * i}))"
        lines.append(f'    %c{i}: (1, 64, fp32) = const(val={blob}, name="c{i}")')
        lines.append(f'    %a{i}: (1, 64, fp32) = add(x=%{previous}, y=%c{i}, name="a{i}")')
        previous = f"a{i}"
    text = "\n".join(lines + [f"  }} -> (%{previous})", "}", ""])
    program = miltext.loads(text)
    start = time.perf_counter()
    assert miltext.check(program, source=text) == []
    assert time.perf_counter() - start < 2.0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_check_of_any_program_reports_and_never_fails(program):
    """Random programs, with every odd corner of the proto: diagnostics, never an exception."""
    text = miltext.dumps(program)
    try:
        parsed = miltext.loads(text)
    except miltext.ParseError:  # the printer's own corners are test_properties' business
        parsed = None
    for checked, source in ((program, None), (parsed, text)):
        if checked is not None:
            for d in miltext.check(checked, source=source, weights=os.path.join(CASES, "weights")):
                assert d.severity in ("error", "warning") and d.rule and d.message
