"""Real torch conversions (issue 13): small BERT, GPT-2 and stateful Llama decoders, CNNs, a ViT,
flexible and enumerated shapes, quantized, palettized and pruned weights, made by coremltools
from torch with fixed seeds (scripts/make_conversions.py; torch is not needed here).

For every one: `check` finds no error (weights included); the program stripped of its output
types and implied names comes back byte for byte from `infer`; text round trips losslessly."""
import os
import sys

import pytest

import miltext
from miltext.infer import infer
from miltext.infer.complete import blocks
from miltext.text.mil.printer import type_text
from support.corpus import HERE, case_id, corpus_files
from support.extras import needs_coremltools

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
import infer_coverage

CONVERSIONS = corpus_files("conversions", ".pb")

def read(path):
    with open(path, "rb") as f:
        return f.read()


def weights_of(path):
    weights = path[:-len(".pb")] + ".weight.bin"
    return weights if os.path.exists(weights) else None


def test_the_conversions_are_the_ones_the_issue_asks_for():
    names = {os.path.basename(p)[:-3] for p in CONVERSIONS}
    assert {"bert", "gpt2", "llama_kv_cache", "resnet", "mobilenet", "vit_flexible_batch",
            "resnet_enumerated", "gpt2_int8", "gpt2_int4_blockwise", "gpt2_palettized"} <= names
    ops = {op.type for p in CONVERSIONS for b in blocks(miltext.Program.from_proto(read(p)))
           for op in b.operations}
    # the run-time shape arithmetic of transformers, state, and compressed weights
    assert {"shape", "gather", "concat", "fill", "reshape", "read_state", "slice_update",
            "constexpr_blockwise_shift_scale", "constexpr_lut_to_dense", "constexpr_sparse_to_dense"} <= ops


@pytest.mark.parametrize("path", CONVERSIONS, ids=case_id)
def test_a_conversion_checks_without_errors(path):
    text = miltext.dumps(miltext.Program.from_proto(read(path)))
    diagnostics = miltext.check(miltext.loads(text, path), filename=path, source=text,
                                weights=weights_of(path))
    assert [f"{d.line}: {d.message}" for d in diagnostics if d.is_error] == []


@pytest.mark.parametrize("path", CONVERSIONS, ids=case_id)
def test_a_conversion_prints_and_parses_back_to_its_bytes(path):
    data = read(path)
    program = miltext.Program.from_proto(data)
    assert program.to_proto().SerializeToString(deterministic=True) == data
    text = miltext.dumps(program)
    assert miltext.loads(text).to_proto().SerializeToString(deterministic=True) == data
    assert miltext.dumps(miltext.loads(text)) == text


@pytest.mark.parametrize("path", CONVERSIONS, ids=case_id)
def test_a_conversion_comes_back_from_the_sugar(path):
    data = read(path)
    needs_coremltools("the conversions hold ops only coremltools' inference types (lstm, upsample_bilinear)")
    got, _ = infer_coverage.reinfer(data)
    assert got == data


def test_inference_works_out_a_head_size_through_run_time_shapes():
    """`view(b, t, heads, -1)` of a (b, t, 32) tensor, b and t read at run time: 8."""
    program = miltext.loads("""main[CoreML7](%x: (?, ?, 32, fp32)) {
  block0() {
    %s = shape(x=%x)
    %b = gather(x=%s, indices=0, axis=0)
    %t = gather(x=%s, indices=1, axis=0)
    %heads = concat(values=(%b, %t, 4, -1), axis=0, interleave=false)
    %y = reshape(x=%x, shape=%heads)
  } -> (%y)
}
""")
    infer(program)
    types = {op.outputs[0].name: type_text(op.outputs[0].type)
             for block in blocks(program) for op in block.operations}
    assert types["heads"] == "(4, int32)"
    assert types["y"] == "(?, ?, 4, 8, fp32)"


def test_fill_to_a_run_time_shape_keeps_the_sizes_it_knows():
    program = miltext.loads("""main[CoreML7](%x: (?, 7, fp32)) {
  block0() {
    %s = shape(x=%x)
    %b = gather(x=%s, indices=0, axis=0)
    %shape = concat(values=(%b, 1, 128), axis=0, interleave=false)
    %y = fill(shape=%shape, value=0.0)
  } -> (%y)
}
""")
    infer(program)
    out = {op.outputs[0].name: type_text(op.outputs[0].type) for block in blocks(program) for op in block.operations}
    assert out["shape"] == "(3, int32)"
    assert out["y"] == "(?, 1, 128, fp32)"


def test_a_size_cast_alone_is_no_longer_known_as_the_same_size():
    """coremltools keeps the run-time sizes of a cast vector but not of a cast scalar: after
    `cast(gather(...), "int32")` the head size of `[b, t, 4, -1]` is unknown, as it records."""
    program = miltext.loads("""main[CoreML7](%x: (?, ?, 32, fp32)) {
  block0() {
    %s = shape(x=%x)
    %s16 = cast(x=%s, dtype="int16")
    %b16 = gather(x=%s16, indices=0, axis=0)
    %t16 = gather(x=%s16, indices=1, axis=0)
    %b = cast(x=%b16, dtype="int32")
    %t = cast(x=%t16, dtype="int32")
    %heads = concat(values=(%b, %t, 4, -1), axis=0, interleave=false)
    %y = reshape(x=%x, shape=%heads)
  } -> (%y)
}
""")
    infer(program)
    assert type_text(program.functions["main"].block.operations[-1].outputs[0].type) == "(?, ?, 4, ?, fp32)"


@pytest.mark.slow
def test_the_native_rules_agree_with_coremltools_op_by_op():
    """scripts/audit_inference.py's builder comparison on every op of the conversions."""
    import audit_inference
    disagreements, unbuilt, compared = [], [], 0
    for path in CONVERSIONS:
        compared += audit_inference.builder(read(path), case_id(path), disagreements, unbuilt)
    assert compared > 500
    assert disagreements == []


def test_positions_up_to_a_run_time_length_have_that_length():
    """range_1d(0, t, 1) is t long: added to a (b, t, 32) tensor the length stays t, so a
    reshape to sizes read from the input before the add still works out the head size."""
    program = miltext.loads("""main[CoreML7](%x: (?, ?, 32, fp32)) {
  block0() {
    %s = shape(x=%x)
    %b = gather(x=%s, indices=0, axis=0)
    %t = gather(x=%s, indices=1, axis=0)
    %positions = range_1d(start=0, end=%t, step=1)
    %p = cast(x=%positions, dtype="fp32")
    %column = expand_dims(x=%p, axes=[-1])
    %z = add(x=%x, y=%column)
    %heads = concat(values=(%b, %t, 4, -1), axis=0, interleave=false)
    %y = reshape(x=%z, shape=%heads)
  } -> (%y)
}
""")
    infer(program)
    types = {op.outputs[0].name: type_text(op.outputs[0].type) for op in program.functions["main"].block.operations}
    assert types["positions"] == "(?, int32)"
    assert types["y"] == "(?, ?, 4, 8, fp32)"


@pytest.mark.parametrize("op", ["concat(values=(%x, %x), axis=%b, interleave=false)",
                                "expand_dims(x=%x, axes=%s)", "transpose(x=%x, perm=%s)",
                                "squeeze(x=%x, axes=%s)", "pad(x=%x, pad=%s)", "reduce_sum(x=%x, axes=%s)",
                                "split(x=%x, split_sizes=%s, axis=0)", "reshape(x=%x, shape=[-1, -1])"])
def test_a_run_time_size_where_a_constant_is_wanted_is_an_error_at_its_line(op):
    program = miltext.loads(f"""main[CoreML7](%x: (?, 4, fp32)) {{
  block0() {{
    %s = shape(x=%x)
    %b = gather(x=%s, indices=0, axis=0)
    %y = {op}
  }} -> (%y)
}}
""")
    with pytest.raises(miltext.infer.InferenceError) as e:
        infer(program, use_coremltools=False)
    assert e.value.loc[0] == 5
    text = miltext.dumps(program)
    assert [d for d in miltext.check(miltext.loads(text), source=text) if d.rule == "inferred-type"] == []


def test_coremltools_is_given_the_run_time_sizes_it_would_have_known():
    """An op left to coremltools (random_uniform has no native rule) gets a shape computed at
    run time as a value it knows in part, as it did when it converted the model."""
    needs_coremltools("random_uniform is typed by coremltools' inference")
    program = miltext.loads("""main[CoreML7](%x: (?, 7, fp32)) {
  block0() {
    %s = shape(x=%x)
    %b = gather(x=%s, indices=0, axis=0)
    %shape = concat(values=(%b, 1, 128), axis=0, interleave=false)
    %y = random_uniform(shape=%shape, low=0.0, high=1.0, seed=1)
  } -> (%y)
}
""")
    who = {}
    infer(program, report=lambda op, family: who.update({op.type: family}))
    assert who["random_uniform"] == "coremltools"
    assert type_text(program.functions["main"].block.operations[-1].outputs[0].type) == "(?, 1, 128, fp32)"
