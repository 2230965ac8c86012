"""Core ML models around MIL programs: `.mlmodel` and `.mlpackage` files, their weight files, and
the model section of MIL text.

    from miltext.model import read_model, write_model
    model = read_model("Model.mlpackage")      # or a .mlmodel, a .pb, a .mil
    model.program                              # the MIL Program (miltext's object model)
    model.spec.description.input[0].name       # the Model message around it, program left out
    write_model(model, "Copy.mlpackage")       # weights copied from model.folder

`Model.folder` is what `@model_path` means for the model's blob values: the folder holding
`model.mlmodel` in a package, the folder of a `.mlmodel`, `.pb` or `.mil` file.
"""
from __future__ import annotations

from .core import Model


def read_model(path, progress=None) -> Model:
    from .io import read_model as read
    return read(path, progress)


def write_model(model: Model, path, progress=None) -> None:
    from .io import write_model as write
    write(model, path, progress)


def unpack(path, folder, progress=None) -> None:
    """Write the model at `path` as `folder`/model.mil and `folder`/weights/."""
    from .folder import unpack as run
    run(path, folder, progress)


def pack(folder, path, progress=None) -> None:
    """Write `folder`/model.mil (with `folder`/weights/) as the model `path` names."""
    from .folder import pack as run
    run(folder, path, progress)


__all__ = ["Model", "read_model", "write_model", "unpack", "pack"]
