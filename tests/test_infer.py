"""Hand-written MIL (issue 8): output types inferred, names and consts implied.

Every corpus program, stripped to the sugar (no output types, no `name=` that repeats the first
output), comes back byte-identical after inference; the native rules cover the ops of nearly
all real models and agree with coremltools; the hand-written transformer block in examples/
builds into a program and a package that coremltools loads, with coremltools' own types."""
import os
import subprocess
import sys

import numpy as np
import pytest

import miltext
from miltext.infer import InferenceError, complete, make_explicit, registry
from miltext.infer.shapes import broadcast
from support.corpus import HERE, corpus_files
from support.extras import needs_coremltools

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
import infer_coverage

EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "transformer_block.mil")

# The ops issue 8 asks native rules for (pooling and reductions spelled out).
NATIVE = ["relu", "gelu", "sigmoid", "tanh", "silu", "add", "sub", "mul", "real_div", "pow",
          "maximum", "equal", "less", "logical_and", "exp", "sqrt", "rsqrt", "abs", "cast", "const",
          "matmul", "linear", "conv", "conv_transpose", "avg_pool", "max_pool", "l2_pool",
          "reshape", "transpose", "expand_dims", "squeeze", "concat", "split", "slice_by_index",
          "slice_by_size", "gather", "reduce_sum", "reduce_mean", "reduce_max", "reduce_argmax",
          "softmax", "layer_norm", "batch_norm", "instance_norm", "pad", "tile", "einsum",
          "scaled_dot_product_attention", "cond", "while_loop"]


@pytest.mark.parametrize("path", corpus_files("coremltools", ".pb"), ids=os.path.basename)
def test_corpus_comes_back_from_the_sugar(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        got, who = infer_coverage.reinfer(data)
    except InferenceError:
        needs_coremltools("this program has ops only coremltools' inference types")
        raise
    assert got == infer_coverage.canonical_bytes(data)
    covered = registry.covered()
    for (family, op_type) in who:
        if family == "coremltools":   # only ops native rules do not cover, or decline
            assert op_type not in covered, op_type


def test_native_rules_cover_the_common_ops():
    assert [op for op in NATIVE if registry.native(op) is None] == []


def test_broadcasting_with_unknown_dims():
    assert broadcast((None, 3), (2, 1)) == (2, 3)
    assert broadcast((None, 1), (1,)) == (None, 1)
    assert broadcast((4,), (None, 2, 1)) == (None, 2, 4)
    with pytest.raises(InferenceError, match=r"\(2, 3\) and \(4\) do not broadcast"):
        broadcast((2, 3), (4,))


def _program(body: str, inputs: str = "%x: (2, 3, fp32)", opset: str = "CoreML7"):
    return miltext.loads(f"main[{opset}]({inputs}) {{\n  block0() {{\n{body}\n  }} -> (%y)\n}}\n")


def test_sugar_becomes_what_coremltools_writes():
    program = _program('    %t = transpose(x=%x, perm=[1, 0])\n'
                       '    %y = mul(x=%t, y=2.0)')
    make_explicit(program)
    text = miltext.dumps(program)
    assert '%t_perm_0: (2, int32) = const(val=[1, 0], name="t_perm_0")' in text
    assert '%t: (3, 2, fp32) = transpose(x=%x, perm=%t_perm_0, name="t")' in text
    assert '%y_y_0: (fp32) = const(val=2.0, name="y_y_0")' in text
    assert '%y: (3, 2, fp32) = mul(x=%t, y=%y_y_0, name="y")' in text


def test_named_ops_and_value_inputs_keep_their_literals():
    needs_coremltools("reshape_like is typed by coremltools' inference")
    program = _program('    %y = relu(x=%x, name="r")\n'
                       '    %z: (2, 3, fp32) = add(x=%x, y=1.0, name="z")\n'
                       '    %w = reshape_like(x=%x, ref_tensors=(%x), begins=(0), ends=(2), end_masks=(True))')
    make_explicit(program)
    ops = program.functions["main"].block.operations
    assert [op.type for op in ops] == ["relu", "add", "reshape_like"]
    assert ops[0].name == "r" and ops[2].name == "w"
    assert not isinstance(ops[2].inputs["begins"][0], str)
    assert ops[2].outputs[0].type == miltext.TensorType("fp32", (2, 3))


def test_const_names_do_not_collide():
    program = _program('    %y_x_0 = relu(x=%x)\n    %y = add(x=%y_x_0, y=[1.0, 2.0, 3.0])')
    complete(program)
    # the literal's const takes the next free name, as coremltools' unique names go
    assert "y_y_0" in {op.name for op in program.functions["main"].block.operations}


def test_symbolic_dims_and_control_flow():
    program = miltext.loads("""main[CoreML7](%x: (?, 3, fp32), %p: (bool)) {
  block0() {
    %c = cond(pred=%p)
      block1() {
        %a = mul(x=%x, y=[2.0, 2.0, 2.0])
      } -> (%a)
      block2() {
        %b = concat(values=(%x, %x), axis=0, interleave=False)
      } -> (%b)
    %y = reduce_sum(x=%c, axes=[1])
  } -> (%y)
}
""")
    make_explicit(program, use_coremltools=False)
    ops = program.functions["main"].block.operations
    assert ops[0].outputs[0].type == miltext.TensorType("fp32", (None, 3))
    assert ops[-1].outputs[0].type == miltext.TensorType("fp32", (None,))


def test_an_op_nothing_infers_is_an_error_at_its_line():
    program = _program("    %y, %i = topk(x=%x, k=1)")
    with pytest.raises(InferenceError, match="cannot infer the output types of topk") as e:
        make_explicit(program, use_coremltools=False)
    assert e.value.loc[0] == 3
    needs_coremltools("the rest of the test is coremltools typing topk")
    make_explicit(program)   # coremltools knows topk
    assert program.functions["main"].block.operations[-1].outputs[0].type == \
        miltext.TensorType("fp32", (2, 1))


def test_contradicting_inputs_are_an_error_naming_the_op():
    program = _program("    %y = add(x=%x, y=[1.0, 2.0])")
    with pytest.raises(InferenceError, match="add: shapes .* do not broadcast"):
        make_explicit(program)


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "miltext.cli", *args], check=False, cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_infer_command_prints_the_explicit_program(tmp_path):
    result = _cli("infer", EXAMPLE, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    program = miltext.loads(result.stdout)
    ops = [op for b in infer_coverage.blocks(program) for op in b.operations]
    assert all(op.name and all(v.type is not None for v in op.outputs) for op in ops)
    assert all(isinstance(b, str) for op in ops for bs in op.inputs.values() for b in bs)
    from miltext.authored.formatter import comment_texts, format_source
    with open(EXAMPLE, encoding="utf-8") as f:
        assert comment_texts(result.stdout) == comment_texts(f.read()) != []   # the author's comments stay
    assert format_source(result.stdout) == result.stdout   # as fmt writes it


def test_infer_command_reports_an_unknown_op(tmp_path):
    (tmp_path / "bad.mil").write_text(
        "main[CoreML7](%x: (2, fp32)) {\n  block0() {\n    %y = frobnicate(x=%x)\n  } -> (%y)\n}\n")
    result = _cli("infer", "bad.mil", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith("bad.mil:3:5: error: cannot infer the output types of frobnicate")


def _coremltools_program(pb_bytes):
    from coremltools.converters.mil.frontend.milproto.load import load_mil_proto
    from coremltools.proto import MIL_pb2
    spec = MIL_pb2.Program()
    spec.ParseFromString(pb_bytes)
    return load_mil_proto(spec, specification_version=8)


def test_the_hand_written_transformer_builds_and_coremltools_agrees(tmp_path):
    needs_coremltools("the test compares with coremltools' own types")
    from miltext.infer.coremltools_rules import miltext_type
    result = _cli("build", EXAMPLE, "-o", "block.pb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    pb = (tmp_path / "block.pb").read_bytes()
    ours = miltext.Program.from_proto(pb)
    theirs = _coremltools_program(pb)   # coremltools' builder re-creates every op, and types it
    their_types = {v.name: miltext_type(v.sym_type) for op in theirs.functions["main"].operations
                   for v in op.outputs}
    our_types = {v.name: v.type for op in ours.functions["main"].block.operations for v in op.outputs}
    assert len(our_types) > 50
    assert {name: their_types[name] for name in our_types} == our_types
    assert registry.native("layer_norm") and all(
        registry.native(op.type) for op in ours.functions["main"].block.operations)


def test_the_hand_written_transformer_builds_into_a_package(tmp_path):
    needs_coremltools("the package is loaded with coremltools")
    result = _cli("build", EXAMPLE, "-o", "block.mlpackage", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    from miltext.model.io import read_model
    program = read_model(str(tmp_path / "block.mlpackage")).program
    pb = program.to_proto().SerializeToString(deterministic=True)
    assert _coremltools_program(pb).functions["main"].outputs[0].shape == (1, 4, 8)
    assert np.prod(program.functions["main"].block.operations[-1].outputs[0].type.shape) == 32


def test_coremltools_refusing_an_op_is_an_error_at_its_line():
    needs_coremltools("the refusal is coremltools'")
    program = _program("    %y, %i = topk(x=%x, k=[1, 2])")
    with pytest.raises(InferenceError, match="topk: coremltools cannot type it") as e:
        make_explicit(program)
    assert e.value.loc[0] == 3


# Values of a form the op cannot take, each alone in a program: `infer` and `build` stop at the
# op with a located error (they crashed with an internal error), and `check` reports the same.
HOSTILE = [
    ("range_1d(start=0.0, end=inf, step=1.0)", "range_1d: end must be a finite number, not inf"),
    ("range_1d(start=0.0, end=nan, step=1.0)", "range_1d: end must be a finite number, not nan"),
    ("concat(values=(%x, %x), axis=[1, 0], interleave=False)", "concat: input 'axis' must be one value"),
    ("expand_dims(x=%x, axes=[\"a\"])", "expand_dims: input 'axes' must hold integers, not ['a']"),
    ("fill(shape=[2147483647, 2147483647, 4], value=0.0)", "fill: it would give an output of shape"),
    ("tile(x=%x, reps=[2147483647, 1])", "tile: it would give an output of shape (2147483647, 4)"),
    ("topk(x=%x, k=-1)", "topk: it would give an output of shape (1, -1), with a negative size"),
    ("make_list(init_length=-5, elem_shape=(2, 3), dtype=\"fp32\", dynamic_length=True)",
     "make_list: init_length must be from 0 to 2,147,483,647, not -5"),
    ("avg_pool(x=%x, kernel_sizes=[1], strides=[1], pad_type=\"valid\")", "avg_pool:"),
]


@pytest.mark.parametrize("call,message", HOSTILE)
def test_values_an_op_cannot_take_are_located_errors_in_infer_build_and_check(tmp_path, call, message):
    path = tmp_path / "m.mil"
    path.write_text(f"main[CoreML7](%x: (1, 4, fp32)) {{\n  block0() {{\n    %y = {call}\n"
                    "  } -> (%y)\n}\n")
    for command in (["infer", "m.mil"], ["build", "m.mil", "-o", "m.pb"], ["build", "--no-verify", "m.mil", "-o", "m.pb"],
                    ["check", "m.mil"]):
        result = subprocess.run([sys.executable, "-m", "miltext.cli", *command], cwd=tmp_path, capture_output=True,
                                text=True, timeout=120)
        assert result.returncode == 1, (command, result.stderr)
        out = result.stdout + result.stderr
        assert "internal error" not in out and "Traceback" not in out, (command, out)
        assert "m.mil:3:" in out and ": error: " in out, (command, out)
        if command[0] == "infer" or "--no-verify" in command:   # check words a dtype fault its own way
            assert message in out, (command, out)
    assert not (tmp_path / "m.pb").exists()
