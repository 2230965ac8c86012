"""The structural diff (`miltext diff`) and the graphs (`miltext graph`, `diff --graph`): ops
aligned by what they compute whatever their names, renames on one line, changed weights in
numbers, exit statuses as diff's; on the real torch MLP fixtures (tests/review, made by
scripts/make_review_fixtures.py) and on every corpus program renamed."""
import os
import re
import shutil
import time
import xml.etree.ElementTree as ET

import pytest

import miltext
from miltext.review import Side, compare
from miltext.review.graph import change_dot, program_dot
from model_cases import PACKAGES, assert_clean_failure, miltext as run, name_of
from support.corpus import proto_cases
from support.native import require_native

HERE = os.path.dirname(os.path.abspath(__file__))
MLP6 = os.path.join(HERE, "review", "mlp6.mlpackage")
MLP7 = os.path.join(HERE, "review", "mlp7.mlpackage")
TORCH_MLP = next(p for p in PACKAGES if name_of(p) == "torch_mlp")


def changed_lines(text: str) -> list:
    return [line for line in text.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]


def test_a_layer_inserted_is_four_ops_added_and_renames_on_one_line(tmp_path):
    result = run("diff", MLP6, MLP7, cwd=tmp_path)
    assert result.returncode == 1 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert lines[2] == "# 4 ops added (2 const, linear, relu), 1 op changed (linear)"
    assert lines[3] == ("# 10 renamed: %var_30 → %var_35, %var_[6,8,10]_weight_to_fp16 → %var_[8,10,12]_weight_to_fp16, "
                        "%var_[6,8,10]_bias_to_fp16 → %var_[8,10,12]_bias_to_fp16, "
                        "%linear_[3-4]_cast_fp16 → %linear_[4-5]_cast_fp16, %input_17_cast_fp16 → %input_21_cast_fp16")
    changed = changed_lines(result.stdout)
    # the new layer, then the next layer's linear, which now reads the new layer's output
    assert [re.search(r"= (\w+)\(", line).group(1) for line in changed] == ["const", "const", "linear", "relu", "linear", "linear"]
    assert changed[5].startswith("+    %linear_4_cast_fp16") and "x=%input_17_cast_fp16" in changed[5]
    assert changed[4].startswith("-    %linear_3_cast_fp16") and "x=%input_13_cast_fp16" in changed[4]
    assert len(lines) < 30                                       # the plain diff is the whole tail
    plain = run("diff", "--text", MLP6, MLP7, cwd=tmp_path)
    assert plain.returncode == 1 and len(changed_lines(plain.stdout)) > 2 * len(changed)


def test_the_same_model_in_two_files_is_no_difference(tmp_path):
    program = MLP6.replace("mlp6.mlpackage", "mlp6.pb")
    for a, b in [(MLP6, MLP6), (TORCH_MLP, TORCH_MLP)]:
        result = run("diff", a, b, cwd=tmp_path)
        assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    del program


def test_an_unreadable_file_exits_2(tmp_path):
    (tmp_path / "broken.pb").write_bytes(b"\x0a\xff")
    assert_clean_failure(run("diff", "broken.pb", MLP6, cwd=tmp_path), 2)
    assert_clean_failure(run("diff", MLP6, cwd=tmp_path), 2)


def _renamed(program: miltext.Program) -> miltext.Program:
    """Every op output renamed (`v0`, `v1`, ...) and every use with it; inputs keep their names."""
    names = {}

    def block(b):
        for op in b.operations:
            for out in op.outputs:
                names[out.name] = out.name = f"v{len(names)}_{len(out.name)}"
            for bindings in op.inputs.values():
                bindings[:] = [names.get(x, x) if isinstance(x, str) else x for x in bindings]
            for inner in op.blocks:
                block(inner)
        b.outputs[:] = [names.get(x, x) for x in b.outputs]

    for fn in program.functions.values():
        for b in fn.blocks.values():
            block(b)
    return program


@pytest.mark.parametrize("path", proto_cases(), ids=os.path.basename)
def test_a_program_renamed_throughout_differs_only_by_its_renames(path):
    with open(path, "rb") as f:
        data = f.read()
    text = miltext.proto_to_text(data)
    renamed = miltext.dumps(_renamed(miltext.Program.from_proto(data)))
    same = compare(Side.from_text(text, "a"), Side.from_text(text, "b"))
    assert not same.differs and same.text() == ""
    change = compare(Side.from_text(text, "a"), Side.from_text(renamed, "b"))
    if renamed == text:
        assert not change.differs
        return
    out = change.text()
    assert changed_lines(out) == [], out
    renames = [line for line in out.splitlines() if line.startswith("# ")]
    assert len(renames) == 1 and " renamed: " in renames[0]


def test_graph_of_a_program_is_its_ops_and_vars(tmp_path):
    result = run("graph", MLP6, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    nodes = re.findall(r'^  (n\d+) \[label="([^"]*)"', result.stdout, re.M)
    edges = re.findall(r"^  (n\d+) -> (n\d+)", result.stdout, re.M)
    labels = [label.split("\\n")[0] for _, label in nodes]
    assert labels == ["%x"] + ["linear", "relu"] * 5 + ["linear", "outputs"]
    assert len(edges) == len(nodes) - 1                          # a chain
    assert "const (16, 16, fp16)" in nodes[3][1]                 # the weights folded into their op
    (tmp_path / "sub").mkdir()
    assert run("graph", MLP6, "-o", "sub/m.dot", cwd=tmp_path).returncode == 0
    assert (tmp_path / "sub" / "m.dot").read_text() == result.stdout
    assert_clean_failure(run("graph", MLP6, "-o", "m.png", cwd=tmp_path))


def test_graph_of_nested_blocks_wires_their_outputs_to_the_op_that_owns_them():
    path = next(p for p in proto_cases() if os.path.basename(p) == "cond_basic.pb")
    with open(path, "rb") as f:
        dot = program_dot(Side.from_text(miltext.proto_to_text(f.read()), "cond"))
    ids = {label.split("\\n")[0] + ":" + label.split("\\n")[-1]: node for node, label in re.findall(r'  (n\d+) \[label="([^"]*)"', dot)}
    cond = next(node for key, node in ids.items() if key.startswith("cond:%cond_0_0"))
    add = next(node for key, node in ids.items() if key.startswith("add:"))
    assert f"  {add} -> {cond};" in dot


def test_diff_graph_colours_the_change_and_folds_what_did_not_change():
    change = compare(Side.read(MLP6), Side.read(MLP7))
    dot = change_dot(change)
    fills = dict(re.findall(r'label="([^"]*)", fillcolor="([^"]*)"', dot))
    green = sorted(label.split("\\n")[0] for label, fill in fills.items() if fill == "#c8f0c8")
    assert green == ["const", "const", "linear", "relu"]
    assert [label.split("\\n")[1] for label, fill in fills.items() if fill == "#ffe0a0"] == ["%linear_4_cast_fp16"]
    assert any("unchanged ops" in label for label in fills)
    assert 'style=dashed' in dot                                 # the old wiring, gone


def test_a_large_change_stays_a_small_picture():
    ops = "\n".join(f"    %r{k}: (4, fp32) = relu(x=%r{k - 1}, name=\"r{k}\")" for k in range(1, 2000))
    text = f"main(%r0: (4, fp32)) {{\n  block0() {{\n{ops}\n  }} -> (%r1999)\n}}\n"
    lines = text.split("\n")
    inserted = "\n".join(lines[:1000] + ['    %t: (4, fp32) = tanh(x=%r997, name="t")'] + lines[1000:])
    inserted = inserted.replace("relu(x=%r997, name=\"r998\")", "relu(x=%t, name=\"r998\")")
    change = compare(Side.from_text(text, "a"), Side.from_text(inserted, "b"))
    assert change.text().splitlines()[2] == "# 1 op added (tanh), 1 op changed (relu)"
    dot = change_dot(change)
    assert dot.count("[label=") < 20
    assert dot.count("unchanged ops") == 2


def require_dot() -> None:
    if shutil.which("dot") is None:
        pytest.fail("Graphviz's dot is not installed: apt-get install graphviz (make test installs it when run "
                    "as root)")


def test_svg_is_drawn_by_graphviz(tmp_path):
    require_dot()
    result = run("diff", "--graph", MLP6, MLP7, "-o", "change.svg", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    root = ET.parse(tmp_path / "change.svg").getroot()
    assert root.tag.endswith("svg")
    texts = [t.text for t in root.iter() if t.tag.endswith("text")]
    assert "%linear_4_cast_fp16" in texts and "2 unchanged ops" in texts
    assert run("graph", MLP6, "-o", "m.svg", cwd=tmp_path).returncode == 0
    assert ET.parse(tmp_path / "m.svg").getroot().tag.endswith("svg")


def test_weights_that_became_nan_or_inf_are_counted_not_hidden():
    with open(os.path.join(HERE, "corpus", "coremltools", "torch_mlp.pb"), "rb") as f:
        text = miltext.proto_to_text(f.read())
    old = "fp16([-0.10016, -0.2305, -0.1819, 0.2346])"
    broken = text.replace(old, "fp16([nan, inf, -0.5, 0.2346])")
    out = compare(Side.from_text(text, "a"), Side.from_text(broken, "b")).text().splitlines()
    assert out[3] == ("# weight %var_4_bias_to_fp16 (4, fp16) changed: 3 of 4 elements, max abs difference "
                      "0.318115, 1 became NaN, 1 became inf")
    out = compare(Side.from_text(broken, "b"), Side.from_text(text, "a")).text().splitlines()
    assert out[3].endswith("3 of 4 elements, max abs difference 0.318115, 1 were NaN and are not, "
                           "1 were inf and are not")
    only = text.replace(old, "fp16([-0.10016, -inf, -0.1819, 0.2346])")
    out = compare(Side.from_text(text, "a"), Side.from_text(only, "b")).text().splitlines()
    assert out[3].endswith("1 of 4 elements, max abs difference 0, 1 became inf")


def test_svg_past_max_ops_is_refused_before_dot_runs(tmp_path):
    result = run("graph", MLP6, "-o", "m.svg", "--max-ops", "5", cwd=tmp_path)
    assert_clean_failure(result)
    assert "the graph has 13 nodes, more than --max-ops 5" in result.stderr and ".dot" in result.stderr
    assert not (tmp_path / "m.svg").exists()
    result = run("diff", "--graph", MLP6, MLP7, "-o", "c.svg", "--max-ops", "5", cwd=tmp_path)
    assert_clean_failure(result, 2)
    assert "more than --max-ops 5" in result.stderr and not (tmp_path / "c.svg").exists()
    assert_clean_failure(run("graph", MLP6, "-o", "m.svg", "--timeout", "-1", cwd=tmp_path), 2)


def test_a_dot_that_does_not_finish_is_stopped_at_the_timeout(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "dot"                      # a Graphviz stuck on a layout
    fake.write_text("#!/bin/sh\nexec sleep 60\n")
    fake.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    started = time.monotonic()
    result = run("graph", MLP6, "-o", "m.svg", "--timeout", "1", cwd=tmp_path, env=env)
    assert time.monotonic() - started < 30
    assert_clean_failure(result)
    assert "dot was still drawing after 1 s and was stopped" in result.stderr
    assert not (tmp_path / "m.svg").exists()


CONTROL_NAMES = ('main[CoreML7](%"in\\x07\\x1b[31m": (2, fp32)) {\n  block0() {\n'
                 '    %"a\\x00b\\x0c\\u2028<&>\\"": (2, fp32) = relu(x=%"in\\x07\\x1b[31m", name="r")\n'
                 '  } -> (%"a\\x00b\\x0c\\u2028<&>\\"")\n}\n')


def test_control_characters_in_names_are_escaped_in_dot_and_svg(tmp_path):
    dot = program_dot(Side.from_text(CONTROL_NAMES, "ctl"))
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f\u2028]", dot)   # only the line breaks DOT needs
    assert '[label="%in\\\\u0007\\\\u001b[31m"' in dot
    assert 'relu\\n%a\\\\u0000b\\\\u000c\\\\u2028<&>\\""' in dot
    require_dot()       # the DOT text is what a drawing starts from; the SVG needs Graphviz
    (tmp_path / "ctl.mil").write_text(CONTROL_NAMES, encoding="utf-8")
    result = run("graph", "ctl.mil", "-o", "ctl.svg", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    texts = [t.text for t in ET.parse(tmp_path / "ctl.svg").getroot().iter() if t.tag.endswith("text")]
    assert "%a\\u0000b\\u000c\\u2028<&>\"" in texts


def test_the_docs_show_what_diff_prints():
    with open(os.path.join(os.path.dirname(HERE), "docs", "review.md"), encoding="utf-8") as f:
        first = re.search(r"```text\n(.*?)```", f.read(), re.S).group(1)
    result = run("diff", "mlp6.mlpackage", "mlp7.mlpackage", cwd=os.path.join(HERE, "review"))
    assert result.stdout == first


def test_lazy_tables_answer_for_keys_not_yet_made():
    from miltext.lazy import LazyTable
    made = []
    table = LazyTable(("a", "b"), lambda key: made.append(key) or key * 2)
    assert "a" in table and "c" not in table and made == []
    assert table["a"] == "aa" and table.get("b") == "bb" and table.get("c", 0) == 0 and made == ["a", "b"]
    with pytest.raises(KeyError):
        table["c"]


def test_textconv_imports_neither_numpy_nor_the_parser(tmp_path, native_enabled):
    import subprocess
    import sys
    require_native("miltext.text.mil._fastprint")   # the native printer is what spares them
    probe = ("import sys, io\nfrom miltext.cli import main\nout = sys.stdout = io.StringIO()\n"
             "main(['textconv', sys.argv[1]])\nsys.stdout = sys.__stdout__\n"
             "print(len(out.getvalue()), *sorted(m for m in ('numpy', 'lark', 'miltext.text.mil.parser') if m in sys.modules))")
    mlmodel = os.path.join(MLP6, "Data", "com.apple.CoreML", "model.mlmodel")
    program = os.path.join(HERE, "corpus", "coremltools", "torch_mlp.pb")
    weights = os.path.join(MLP6, "Data", "com.apple.CoreML", "weights", "weight.bin")
    for path in (mlmodel, program, weights):
        result = subprocess.run([sys.executable, "-c", probe, path], capture_output=True, text=True, cwd=tmp_path)
        size, *heavy = result.stdout.split()
        assert int(size) > 200 and heavy == [], (path, result.stdout, result.stderr)


def test_an_immediate_weight_changed_is_summed_up_too():
    with open(os.path.join(HERE, "corpus", "coremltools", "torch_mlp.pb"), "rb") as f:
        text = miltext.proto_to_text(f.read())
    old = "fp16([-0.10016, -0.2305, -0.1819, 0.2346])"
    assert old in text
    changed = text.replace(old, "fp16([-0.10016, -0.2305, -0.5, 0.2346])")
    out = compare(Side.from_text(text, "a"), Side.from_text(changed, "b")).text().splitlines()
    assert out[2:4] == ["# 1 op changed (const)",
                        "# weight %var_4_bias_to_fp16 (4, fp16) changed: 1 of 4 elements, max abs difference 0.318115"]
    assert len(changed_lines("\n".join(out))) == 2               # the linear using it is the same op
    scalar = text.replace('const(val=-1, name="op_17")', 'const(val=1, name="op_17")')
    out = compare(Side.from_text(text, "a"), Side.from_text(scalar, "b")).text()
    assert "# 1 op changed (const)" in out and "# weight" not in out  # a scalar is no weight
