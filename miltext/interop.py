"""Programs to and from coremltools, through the serialized MIL proto and coremltools' own
exporter and loader, so that nothing is translated twice. Needs the `coremltools` extra.

Blob values (weights in a weight file) need their file. `folder` is the model folder that
`@model_path` means: from_coremltools copies the weight files into `folder`/weights/ and keeps
the references; without it, each blob becomes an immediate value, so the program stands alone.
to_coremltools reads a program's blobs from `folder`/weights/.
"""
from __future__ import annotations

import os
import shutil
import tempfile

from . import dtypes
from .ir import Program
from .ir.values import encode_tensor
from .model.blobs import MODEL_PATH, Weights, files_to_copy, references

WEIGHTS = MODEL_PATH + "weights"


def from_coremltools(obj, folder=None) -> Program:
    """A miltext Program from a pymil Program or an ML program MLModel."""
    from coremltools.converters.mil.mil import Program as PymilProgram
    from coremltools.models import MLModel
    if isinstance(obj, PymilProgram):
        with tempfile.TemporaryDirectory(prefix="miltext-") as tmp:
            message = export(obj, os.path.join(tmp, "weights"))
            return _with_weights(Program.from_proto(message.SerializeToString()), tmp, folder)
    if not isinstance(obj, MLModel):
        raise TypeError(f"from_coremltools takes a coremltools Program or MLModel, not {type(obj).__name__}")
    spec = obj.get_spec()
    if spec.WhichOneof("Type") != "mlProgram":
        raise ValueError("the MLModel is not an ML program (a neural network or another kind of model)")
    program = Program.from_proto(spec.mlProgram.SerializeToString())
    model_folder = os.path.dirname(obj.weights_dir) if obj.weights_dir else None
    return _with_weights(program, model_folder, folder)


def to_coremltools(program: Program, folder=None):
    """A pymil Program (coremltools.converters.mil.Program) from a miltext Program; blob values
    are read from `folder`/weights/."""
    from coremltools.converters.mil.frontend.milproto.load import load_mil_proto
    from coremltools.proto import MIL_pb2
    files = {ref.blob.file for ref in references(program)}
    if files and folder is None:
        raise ValueError("the program has blob values: pass the model folder that holds weights/")
    if any(os.path.dirname(f) != WEIGHTS for f in files):   # coremltools looks in weights/ only
        raise ValueError(f"coremltools reads blob values from {WEIGHTS}/ only, not from {sorted(files)}")
    message = MIL_pb2.Program.FromString(program.to_bytes(strict=True))
    weights_dir = os.path.join(folder, "weights") if folder is not None else ""
    return load_mil_proto(message, _spec_version(program), weights_dir)


def export(prog, weights_dir: str):
    """The MIL proto message coremltools writes for a pymil Program (at the specification version
    of its newest opset), its weights in `weights_dir`."""
    from coremltools.converters.mil.backend.mil.load import MILProtoExporter
    os.makedirs(weights_dir, exist_ok=True)
    versions = [f.opset_version for f in prog.functions.values() if f.opset_version is not None]
    version = max(versions, default=_lowest_version())
    return MILProtoExporter(prog, weights_dir=weights_dir, specification_version=version).export()


def _spec_version(program: Program) -> int:
    """The specification version of the newest opset the program's functions use."""
    import coremltools as ct
    by_opset = {name: version for version, name in ct._OPSET.items()}
    versions = [by_opset[opset] for fn in program.functions.values()
                for opset in (fn.opset, *fn.blocks) if opset in by_opset]
    return max(versions, default=_lowest_version())


def _lowest_version() -> int:
    import coremltools as ct
    return ct._LOWEST_ALLOWED_SPECIFICATION_VERSION_FOR_MILPROGRAM


def _with_weights(program: Program, model_folder, folder) -> Program:
    """`program`, its blobs read from `model_folder`: copied to `folder`, or else made immediate."""
    if not references(program):
        return program
    if folder is None:
        with Weights(model_folder, "<coremltools>") as weights:
            for ref in references(program):
                dtype = ref.type.dtype   # coremltools writes blobs of tensors only
                values = weights.reader(ref.blob.file).read(ref.blob.offset, dtype)
                ref.value.data = encode_tensor(dtypes.by_name(dtype), values)
        return program
    for name in files_to_copy(program, model_folder):
        target = os.path.join(folder, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(model_folder, name), target)
    return program
