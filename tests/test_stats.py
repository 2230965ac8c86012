"""`miltext stats` (issue 32) on the real conversions of tests/corpus/conversions: each weight's
compression scheme and bits as the constexpr_* op defines them (worked out here from the op's
inputs' shapes, after coremltools' op definitions), totals that are the weight file's size, no
weight file opened without --values; and `miltext diff --weights`."""
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import miltext
from miltext.cli import main
from support.corpus import CORPUS

CONVERSIONS = os.path.join(CORPUS, "conversions")
COMPRESSED = ["gpt2_int8", "gpt2_int4_blockwise", "gpt2_palettized", "gpt2_palettized_scaled",
              "gpt2_pruned", "gpt2_pruned_palettized", "resnet_int8_ios16"]
BITS = {"int4": 4, "uint4": 4, "int8": 8, "uint8": 8, "uint1": 1, "uint2": 2, "uint3": 3, "uint6": 6,
        "fp16": 16, "fp32": 32, "int32": 32, "uint32": 32}


def conversion(name, folder):
    """The conversion as a .pb with its weights/weight.bin beside it (where @model_path leads)."""
    os.makedirs(os.path.join(folder, "weights"), exist_ok=True)
    shutil.copy(os.path.join(CONVERSIONS, name + ".weight.bin"), os.path.join(folder, "weights", "weight.bin"))
    shutil.copy(os.path.join(CONVERSIONS, name + ".pb"), os.path.join(folder, name + ".pb"))
    return os.path.join(folder, name + ".pb")


def stats_json(path, capsys, *flags):
    assert main(["stats", path, "--json", *flags]) == 0
    return json.loads(capsys.readouterr().out)


# ---- what the op definitions say, worked out from the types of an op's inputs ----------------

def input_types(program):
    """op -> {input: TensorType} for every constexpr op, through the consts that feed it."""
    defined = {}
    for fn in program.functions.values():
        for op in fn.block.operations:
            for var in op.outputs:
                defined[var.name] = var.type
    found = []
    for fn in program.functions.values():
        for op in fn.block.operations:
            if op.type.startswith("constexpr_"):
                types = {}
                for key, bindings in op.inputs.items():
                    types[key] = defined[bindings[0]] if isinstance(bindings[0], str) else bindings[0].type
                for key, value in op.attributes.items():
                    types.setdefault(key, value.type)
                found.append((op, types))
    return found


def expected_stage(op, t):
    """(scheme words, bits of a stored element, elements per block) as coremltools defines the op."""
    if op.type == "constexpr_lut_to_dense" and len(t["lut"].shape) == 1:      # iOS16: lut [2^n]
        return "palette", int(math.log2(t["lut"].shape[0])), None
    if op.type in ("constexpr_lut_to_dense", "constexpr_lut_to_sparse"):      # lut [*blocks, 2^n, V]
        indices = t["indices"] if "indices" in t else t["indices_mask"]
        lut = t["lut"].shape
        nbits = int(math.log2(lut[-2]))
        assert nbits == BITS[t.get("indices", t.get("indices_nonzero_data")).dtype]   # NUM_PALETTES = 2^nbits
        return "palette", nbits, [d // n for d, n in zip(indices.shape, lut[:-2])]
    if op.type == "constexpr_blockwise_shift_scale":                         # block = data dim / scale dim
        return "shift-scale", BITS[t["data"].dtype], [d // n for d, n in zip(t["data"].shape, t["scale"].shape)]
    if op.type == "constexpr_affine_dequantize":
        return "affine", BITS[t["quantized_data"].dtype], None
    if op.type == "constexpr_sparse_to_dense":
        return "sparse", None, None
    raise AssertionError(op.type)


@pytest.mark.parametrize("name", COMPRESSED)
def test_each_compressed_weight_has_the_scheme_and_bits_its_constexpr_op_defines(name, tmp_path, capsys):
    with open(os.path.join(CONVERSIONS, name + ".pb"), "rb") as f:
        program = miltext.Program.from_proto(f.read())
    got = stats_json(conversion(name, str(tmp_path)), capsys)
    stages = {}
    for w in got["weights"]:
        for s in w["stages"]:
            stages.setdefault(s["op"], []).append(s)
    ops = input_types(program)
    assert ops and sum(len(v) for v in stages.values()) == len(ops)
    seen = {}
    for op, t in ops:
        scheme, bits, block = expected_stage(op, t)
        s = stages[op.type][seen.setdefault(op.type, 0)]
        seen[op.type] += 1
        assert (s["scheme"], s["bits"]) == (scheme, bits), op.outputs[0].name
        if block is not None:
            assert s["block"] == block, op.outputs[0].name
        if scheme == "sparse":
            out = op.outputs[0].type.shape
            assert s["density"] == pytest.approx(t["nonzero_data"].shape[0] / math.prod(out))
    # bits per parameter: every stored input's elements x bits, over the elements given out
    for w in got["weights"]:
        stored = sum(math.prod(p["shape"]) * BITS[p["dtype"]] for p in w["parts"])
        assert w["bits_per_param"] == pytest.approx(stored / math.prod(w["shape"]))


def test_the_schemes_read_as_a_person_names_them(tmp_path, capsys):
    forms = {}
    for name in ("gpt2_int8", "gpt2_int4_blockwise", "gpt2_palettized", "gpt2_pruned_palettized", "resnet_int8_ios16"):
        forms[name] = stats_json(conversion(name, str(tmp_path / name)), capsys)["weights"][0]["stored_as"]
    assert forms == {
        "gpt2_int8": "int8 symmetric shift-scale, per channel (axis 0)",
        "gpt2_int4_blockwise": "int4 symmetric shift-scale, per block of 16 along axis 1",
        "gpt2_palettized": "4-bit palette, per block of 16 along axis 0",
        "gpt2_pruned_palettized": "sparse, 50.0% nonzero + 2-bit palette, per tensor",
        "resnet_int8_ios16": "int8 affine, per channel (axis 0)"}


@pytest.mark.parametrize("name", COMPRESSED + ["gpt2", "bert", "llama_multifunction", "resnet"])
def test_the_totals_are_the_weight_files_size(name, tmp_path, capsys):
    path = conversion(name, str(tmp_path))
    got = stats_json(path, capsys)
    [wf] = got["disk"]["weight_files"]
    size = os.path.getsize(tmp_path / "weights" / "weight.bin")
    assert wf["size"] == size and wf["accounted"] == size and wf["unreferenced"] == 0
    assert got["disk"]["total"] == size + os.path.getsize(path)


def test_stats_never_opens_the_weight_file_without_values(tmp_path, capsys, monkeypatch):
    path = conversion("gpt2_palettized", str(tmp_path))
    before = stats_json(path, capsys)
    weights = tmp_path / "weights" / "weight.bin"
    weights.write_bytes(b"\xff" * weights.stat().st_size)        # garbage of the same size
    import miltext.model.weights as reader
    def refuse(*args, **kwargs):
        raise AssertionError("stats opened a weight file")
    monkeypatch.setattr(reader.WeightReader, "__init__", refuse)
    assert stats_json(path, capsys) == before
    # a FIFO that nobody writes: opening it would hang
    weights.unlink()
    os.mkfifo(weights)
    done = subprocess.run([sys.executable, "-m", "miltext.cli", "stats", path], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "weight.bin: 0 bytes" in done.stdout


def test_values_are_the_weights_numbers(tmp_path, capsys):
    from miltext.model.weights import WeightReader
    path = conversion("gpt2_int8", str(tmp_path))
    got = stats_json(path, capsys, "--values")
    w = got["weights"][0]
    parts = {p["input"]: p["blob"]["offset"] for p in w["parts"]}
    with WeightReader(tmp_path / "weights" / "weight.bin") as r:          # scale * data, per row
        want = r.read(parts["data"]).reshape(w["shape"]).astype(np.float32) * \
            r.read(parts["scale"]).reshape(-1, 1).astype(np.float32)
    want = want.astype(np.float16).astype(np.float64)
    v = w["values"]
    assert (v["min"], v["max"], v["zeros"], v["non_finite"]) == (want.min(), want.max(), int((want == 0).sum()), 0)
    assert v["std"] == pytest.approx(want.std(), rel=1e-9)
    dense = next(x for x in got["weights"] if x["stored_as"] == "fp16 dense" and x["parts"][0]["blob"])
    with WeightReader(tmp_path / "weights" / "weight.bin") as r:
        array = r.read(dense["parts"][0]["blob"]["offset"]).astype(np.float64)
    assert (dense["values"]["min"], dense["values"]["max"]) == (array.min(), array.max())


def test_a_dense_blob_is_read_in_slices_of_whole_bytes(tmp_path):
    from miltext.model.weights import WeightReader, write_weights
    path = tmp_path / "w.bin"
    values = np.arange(37) % 16
    [offset] = write_weights(path, [("uint4", values)])
    with WeightReader(path) as r:
        pieces = list(r.read_slices(offset, 10))
    assert [p.size for p in pieces] == [8, 8, 8, 8, 5]
    np.testing.assert_array_equal(np.concatenate(pieces), values)


def test_the_table_layers_and_large_uncompressed_weights(tmp_path, capsys):
    path = conversion("gpt2_palettized", str(tmp_path))
    assert main(["stats", path]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == (f"{path}: 1 function, 334 ops, 38 weights, 28,352 parameters, "
                                   "17.3 KB of weights (4.88 bits per parameter)")
    assert ["constexpr_lut_to_dense", "14"] in [line.split() for line in out.splitlines()]
    layers = {line.split()[0]: line.split()[1:4] for line in out.split("weights by layer\n")[1].split("\n\n")[0].splitlines()[1:]}
    assert layers["attn_0_"] == ["8", "4,224", "2,560"] and layers["ff_1_"] == ["4", "8,352", "4,736"]
    assert "14 of 38 weights compressed, 27,136 of 28,352 parameters" in out
    got = stats_json(conversion("gpt2_int8", str(tmp_path / "int8")), capsys)
    assert got["large_uncompressed"] == []
    got = stats_json(conversion("gpt2", str(tmp_path / "dense")), capsys)
    assert got["large_uncompressed"] == [w["name"] for w in got["weights"] if math.prod(w["shape"]) >= 2048]


def test_a_compiled_model_and_a_package(tmp_path, capsys):
    from miltext.model import read_model, write_model
    from miltext.text.dialects import print_text
    path = conversion("gpt2_int4_blockwise", str(tmp_path / "pb"))
    want = stats_json(path, capsys)
    model = read_model(path)
    compiled = tmp_path / "Model.mlmodelc"
    (compiled / "weights").mkdir(parents=True)
    (compiled / "model.mil").write_text(print_text(model.program, "modelmil"))
    shutil.copy(tmp_path / "pb" / "weights" / "weight.bin", compiled / "weights" / "weight.bin")
    package = str(tmp_path / "Model.mlpackage")
    write_model(model, package)
    for other in (str(compiled), package):
        got = stats_json(other, capsys)
        assert [(w["name"], w["stored_as"], w["bytes"]) for w in got["weights"]] == \
            [(w["name"], w["stored_as"], w["bytes"]) for w in want["weights"]]
        assert got["disk"]["weight_files"] == want["disk"]["weight_files"]


def test_plot_writes_an_svg_and_only_where_it_may(tmp_path, capsys):
    import xml.etree.ElementTree as ET
    path = conversion("gpt2_palettized", str(tmp_path))
    svg = tmp_path / "layers.svg"
    assert main(["stats", path, "--plot", str(svg)]) == 0
    root = ET.parse(svg).getroot()
    bars = [e for e in root.iter("{http://www.w3.org/2000/svg}rect") if e.get("fill") == "#9ecae1"]
    assert len(bars) == 13                    # one per layer
    capsys.readouterr()
    (tmp_path / "folder.svg").mkdir()
    assert main(["stats", path, "--plot", str(tmp_path / "folder.svg")]) == 1
    assert main(["stats", path, "--plot", str(tmp_path / "chart.png")]) == 1
    err = capsys.readouterr().err
    assert "folder.svg: error:" in err and "chart.png: error: --plot writes SVG" in err
    assert not (tmp_path / "chart.png").exists()


# ---- diff --weights ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, form, bits, bound", [
    ("gpt2_palettized", "4-bit palette, per block of 16 along axis 0", "4.50", 0.15),
    ("gpt2_int4_blockwise", "int4 symmetric shift-scale, per block of 16 along axis 1", "5.00", 0.10),
    ("gpt2_int8", "int8 symmetric shift-scale, per channel (axis 0)", "8.50", 0.01)])
def test_diff_weights_names_the_new_form_and_its_error(name, form, bits, bound, tmp_path, capsys):
    from miltext.model.weights import WeightReader
    old = conversion("gpt2", str(tmp_path / "old"))
    new = conversion(name, str(tmp_path / "new"))
    assert main(["diff", "--weights", old, new]) == 1
    lines = capsys.readouterr().out.splitlines()
    first = lines[0]
    assert first.startswith(f"# weight %tok_weight_to_fp16_{'palettized' if 'palett' in name else 'quantized'} "
                            f"(was %tok_weight_to_fp16) (64, 32): fp16 dense, 16.00 bits → {form}, {bits} bits; "
                            "reconstruction error max ")
    # the error against the dense weight, worked out here: new values from the interpreter's run
    relative = float(first.split("(")[-1].split("%")[0]) / 100
    assert 0 < relative < bound
    got = stats_json(new, capsys, "--values")["weights"][0]["values"]
    dense = stats_json(old, capsys)["weights"][0]["parts"][0]["blob"]["offset"]
    with WeightReader(tmp_path / "old" / "weights" / "weight.bin") as r:
        a = r.read(dense).astype(np.float64)
    assert float(first.split("max ")[1].split(",")[0]) >= abs(got["max"] - a.max()) - 1e-3
    assert len(lines) == sum(1 for line in lines if line.startswith("# weight %"))


def test_diff_weights_of_the_same_model_is_empty(tmp_path, capsys):
    a = conversion("gpt2_int8", str(tmp_path / "a"))
    b = conversion("gpt2_int8", str(tmp_path / "b"))
    assert main(["diff", "--weights", a, b]) == 0
    assert capsys.readouterr().out == ""


def test_the_git_driver_adds_the_weights_that_changed_form(tmp_path):
    from miltext.review.git import external_diff
    old = conversion("gpt2", str(tmp_path / "old"))
    new = conversion("gpt2_palettized", str(tmp_path / "new"))
    out = external_diff(["model.pb", old, "0" * 40, "100644", new, "1" * 40, "100644"]).splitlines()
    assert out[0] == "diff --miltext a/model.pb b/model.pb" and out[1] == "--- a/model.pb"
    changed = [line for line in out if line.startswith("# weight %")]
    assert len(changed) == 14 and changed[0].startswith(
        "# weight %tok_weight_to_fp16_palettized (was %tok_weight_to_fp16) (64, 32): fp16 dense, 16.00 bits → "
        "4-bit palette, per block of 16 along axis 0, 4.50 bits; reconstruction error max ")
    assert out.index(changed[0]) > max(i for i, line in enumerate(out) if line.startswith("@@"))
