"""Real torch conversions (issue 13): small BERT, GPT-2 and stateful Llama decoders, CNNs, a ViT,
flexible and enumerated shapes, quantized, palettized and pruned weights, made by coremltools
from torch with fixed seeds (scripts/make_conversions.py; torch is not needed here).

For every one: `check` finds no error (weights included); the program stripped of its output
types and implied names comes back byte for byte from `infer`; text round trips losslessly."""
import os
import sys

import pytest
from conftest import HERE, case_id, corpus_files

import miltext
from miltext.infer import infer
from miltext.infer.complete import blocks
from miltext.text.printer import type_text

sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
import infer_coverage

CONVERSIONS = corpus_files("conversions", ".pb")

# coremltools' reduce_transposes pass retypes the attention of these after conversion and
# forgets the head size it had worked out (a `?` where the reshape to `[b, t, 4, -1]` gives 8):
# inference gives the size, which is no contradiction of the program.
RETYPED_BY_A_PASS = {"gpt2", "gpt2_int8", "gpt2_int4_blockwise", "gpt2_palettized", "gpt2_pruned"}


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


def _differences(original: bytes, inferred: bytes) -> list:
    """(op type, recorded type, inferred type) of each output typed differently."""
    a, b = (miltext.Program.from_proto(d) for d in (original, inferred))
    ops_b = {op.name: op for block in blocks(b) for op in block.operations}
    out = []
    for block in blocks(a):
        for op in block.operations:
            for x, y in zip(op.outputs, ops_b[op.name].outputs):
                if x.type != y.type:
                    out.append((op.type, type_text(x.type), type_text(y.type), x.type, y.type))
    return out


@pytest.mark.parametrize("path", CONVERSIONS, ids=case_id)
def test_a_conversion_comes_back_from_the_sugar(path):
    data = read(path)
    got, _ = infer_coverage.reinfer(data)
    name = os.path.basename(path)[:-3]
    if name not in RETYPED_BY_A_PASS:
        assert got == data
        return
    differences = _differences(data, got)
    assert differences, "coremltools' pass no longer forgets sizes: drop the exception"
    for op_type, recorded, inferred, x, y in differences:
        # only the attention's reshapes and what follows them, and only sizes the record lacks
        assert op_type in ("reshape", "transpose", "matmul"), (op_type, recorded, inferred)
        assert x.dtype == y.dtype and len(x.shape) == len(y.shape), (recorded, inferred)
        assert all(a == b or a is None for a, b in zip(x.shape, y.shape)), (recorded, inferred)
        assert 8 in y.shape, (recorded, inferred)


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
