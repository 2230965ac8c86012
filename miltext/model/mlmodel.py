"""`.mlmodel` files: a serialized CoreML.Specification.Model whose `mlProgram` is the MIL program.

Every field besides the program stays in `Model.spec` exactly as read, fields this schema does
not know included (protobuf keeps them), and is written back as it was.
"""
from __future__ import annotations

import os

from google.protobuf.message import DecodeError

from ..errors import InputError
from ..files import read_regular
from ..proto import schema
from .core import Model


def read_mlmodel(path: str, folder: str | None = None) -> Model:
    data = read_regular(path)
    return model_from_bytes(data, path, folder if folder is not None else os.path.dirname(os.path.abspath(path)))


def model_from_bytes(data: bytes, path: str, folder: str | None) -> Model:
    try:
        spec = schema.Model.FromString(data)
    except DecodeError as e:
        why = "nested too deeply" if "MaxDepth" in str(e) else "truncated or corrupt"
        raise InputError(f"{path}: not a Core ML model ({why} protobuf)") from None
    if not spec.HasField("mlProgram"):
        raise InputError(f"{path}: not an ML program: the model holds no MIL program "
                         "(a neural network or another kind of Core ML model)")
    program = spec.mlProgram.SerializeToString()
    spec.ClearField("mlProgram")
    return Model(spec=spec, folder=folder, source=path, program_proto=program)


def model_to_bytes(model: Model) -> bytes:
    """The .mlmodel bytes of a model (deterministic serialization)."""
    return model.full_spec().SerializeToString(deterministic=True)
