"""coremltools -> miltext -> coremltools keeps a program exactly: coremltools serializes the
program that comes back to the same proto bytes as the one that went in."""
import os
import subprocess
import sys

import numpy as np
import pytest

import miltext

ct = pytest.importorskip("coremltools")
from coremltools.converters.mil import Builder as mb  # noqa: E402
from coremltools.converters.mil.frontend.milproto.load import load_mil_proto  # noqa: E402
from coremltools.converters.mil.mil import types  # noqa: E402

from miltext.interop import export  # noqa: E402
from miltext.model.blobs import references  # noqa: E402
from support.corpus import corpus_files, manifest  # noqa: E402


def proto_bytes(prog, weights_dir) -> bytes:
    return export(prog, str(weights_dir)).SerializeToString(deterministic=True)


def weight_files(folder) -> dict:
    return {name: open(os.path.join(folder, name), "rb").read() for name in sorted(os.listdir(folder))}


def fresh_names():
    """coremltools names the consts its loader adds from a counter per process: restart it, so
    that two loads of one program give the same names."""
    mb.name_count.clear()


def reloaded(prog, tmp_path):
    """`prog` through coremltools' own exporter and loader, without miltext."""
    message = export(prog, str(tmp_path / "r"))
    fresh_names()
    return load_mil_proto(message, max(f.opset_version for f in prog.functions.values()), str(tmp_path / "r"))


def assert_round_trip(prog, tmp_path, exact=True):
    """Through miltext with its blobs made immediate, and with them kept in a model folder. Not
    `exact`: coremltools' own loader changes the program (it adds consts for cond and
    while_loop), and miltext must give just what it gives."""
    expected = proto_bytes(prog if exact else reloaded(prog, tmp_path), tmp_path / "a")
    inlined = miltext.from_coremltools(prog)
    fresh_names()
    assert proto_bytes(miltext.to_coremltools(inlined), tmp_path / "b") == expected
    kept = miltext.from_coremltools(prog, folder=str(tmp_path / "model"))
    fresh_names()
    assert proto_bytes(miltext.to_coremltools(kept, str(tmp_path / "model")), tmp_path / "c") == expected
    assert weight_files(tmp_path / "c") == weight_files(tmp_path / "a")


# -- programs built with coremltools' MIL builder ---------------------------------------------

def mlp():
    rng = np.random.default_rng(0)
    w1, b1 = rng.standard_normal((16, 8)).astype(np.float32), rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((4, 16)).astype(np.float16)

    @mb.program(input_specs=[mb.TensorSpec((2, 8))], opset_version=ct.target.iOS17)
    def prog(x):
        h = mb.relu(x=mb.linear(x=x, weight=w1, bias=b1))
        return mb.linear(x=mb.cast(x=h, dtype="fp16"), weight=w2)
    return prog


def control_flow():
    @mb.program(input_specs=[mb.TensorSpec((1, 2)), mb.TensorSpec((1,), dtype=types.bool)],
                opset_version=ct.target.iOS17)
    def prog(x, pred):
        chosen = mb.cond(pred=mb.squeeze(x=pred), _true_fn=lambda: mb.mul(x=x, y=2.0),
                         _false_fn=lambda: mb.relu(x=x))
        i, total = mb.while_loop(_cond=lambda i, t: mb.less(x=i, y=5),
                                 _body=lambda i, t: (mb.add(x=i, y=1), mb.add(x=t, y=chosen)),
                                 loop_vars=(0, chosen))
        return total
    return prog


def state():
    @mb.program(input_specs=[mb.StateTensorSpec((2, 3), dtype=types.fp16), mb.TensorSpec((2, 3), dtype=types.fp16)],
                opset_version=ct.target.iOS18)
    def prog(cache, x):
        new = mb.add(x=mb.read_state(input=cache), y=x)
        mb.coreml_update_state(state=cache, value=new)
        return mb.mul(x=new, y=np.float16(2.0))
    return prog


def int4_lut():
    rng = np.random.default_rng(1)
    indices = rng.integers(0, 16, (8, 16)).astype(types.np_uint4_dtype)
    lut = rng.standard_normal((1, 1, 16, 1)).astype(np.float16)

    @mb.program(input_specs=[mb.TensorSpec((1, 16), dtype=types.fp16)], opset_version=ct.target.iOS18)
    def prog(x):
        weight = mb.constexpr_lut_to_dense(indices=indices, lut=lut)
        return mb.linear(x=x, weight=weight)
    return prog


@pytest.mark.parametrize("make,exact", [(mlp, True), (int4_lut, True), (state, True), (control_flow, False)],
                         ids=["mlp", "int4_lut", "state", "control_flow"])
def test_builder_program(make, exact, tmp_path):
    prog = make()
    # `exact` says whether coremltools' own proto round trip keeps the program as it is.
    same = proto_bytes(reloaded(prog, tmp_path), tmp_path / "x") == proto_bytes(prog, tmp_path / "y")
    assert same == exact
    assert_round_trip(prog, tmp_path, exact)


# -- converted models: the corpus packages ------------------------------------------------------

PACKAGES = corpus_files("coremltools", ".mlpackage")


@pytest.mark.parametrize("path", PACKAGES, ids=os.path.basename)
def test_mlmodel(path, tmp_path):
    model = ct.models.MLModel(path, skip_model_load=True)
    spec = model.get_spec()
    reference = load_mil_proto(spec.mlProgram, spec.specificationVersion, model.weights_dir)
    expected = proto_bytes(reference, tmp_path / "a")
    assert proto_bytes(miltext.to_coremltools(miltext.from_coremltools(model)), tmp_path / "b") == expected
    # With the weights kept, miltext holds the package's program as it is.
    kept = miltext.from_coremltools(model, folder=str(tmp_path / "model"))
    assert kept.to_proto().SerializeToString(deterministic=True) == \
        spec.mlProgram.SerializeToString(deterministic=True)
    assert proto_bytes(miltext.to_coremltools(kept, str(tmp_path / "model")), tmp_path / "c") == expected


# -- programs without weights: the other corpus .pb files that coremltools reads ---------------

CASES = manifest()


def _program_case(path) -> bool:
    case = CASES.get(os.path.basename(path)[:-3], {})
    return case.get("reload_ok") and not case.get("has_mlpackage") and not case["proto"]["blob_values"]


PROGRAMS = [p for p in corpus_files("coremltools", ".pb") if _program_case(p)]


@pytest.mark.parametrize("path", PROGRAMS, ids=os.path.basename)
def test_program_file(path, tmp_path):
    data = open(path, "rb").read()
    version = CASES[os.path.basename(path)[:-3]]["specification_version"]
    fresh_names()
    reference = load_mil_proto(ct.proto.MIL_pb2.Program.FromString(data), version)
    program = miltext.Program.from_proto(data)
    fresh_names()
    back = miltext.to_coremltools(program)
    assert proto_bytes(back, tmp_path / "b") == proto_bytes(reference, tmp_path / "a")
    assert miltext.from_coremltools(back).to_proto().SerializeToString(deterministic=True) == \
        proto_bytes(reference, tmp_path / "c")


# -- the edges ----------------------------------------------------------------------------------

def test_blobs_need_a_folder(tmp_path):
    program = miltext.from_coremltools(mlp(), folder=str(tmp_path))
    with pytest.raises(ValueError, match="blob values"):
        miltext.to_coremltools(program)


def test_not_coremltools():
    with pytest.raises(TypeError, match="coremltools Program or MLModel"):
        miltext.from_coremltools(42)


def test_import_miltext_stays_light():
    code = "import sys, miltext; miltext.from_coremltools; print('coremltools' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_blobs_only_from_weights(tmp_path):
    program = miltext.from_coremltools(mlp(), folder=str(tmp_path))
    for ref in references(program):
        ref.blob.file = "@model_path/other.bin"
    with pytest.raises(ValueError, match="weights/ only"):
        miltext.to_coremltools(program, str(tmp_path))
