"""A model as a folder of text: `model.mil` (its model section and program) and `weights/` (its
weight files, byte for byte). `@model_path` in model.mil means the folder itself, so the folder
builds back into the same model.

Unpacking writes the whole folder at once (a temporary folder, then a rename). It replaces a
folder only when that holds nothing but what an unpack writes (OWNED), so no other file is ever
lost (files.claim_output).
"""
from __future__ import annotations

import os

from ..errors import InputError
from ..files import atomic_folder
from ..progress import Silent
from .blobs import Weights, files_to_copy
from .io import read_model, write_model
from .package import copy_file
from .text import model_text

MIL_FILE = "model.mil"
WEIGHTS = "weights"
OWNED = (MIL_FILE, f"{WEIGHTS}/weight.bin")


def unpack(path: str, folder: str, progress=None) -> None:
    progress = progress or Silent()
    model = read_model(path, progress)
    with Weights(model.folder, path) as weights:
        weights.check_all(model.program)
    text = model_text(model).encode("utf-8")
    files = files_to_copy(model.program, model.folder)
    progress.total = len(text) + sum(os.path.getsize(os.path.join(model.folder, f)) for f in files)
    with atomic_folder(folder, OWNED) as tmp:
        with open(os.path.join(tmp, MIL_FILE), "wb") as f:
            f.write(text)
        progress.advance(len(text), MIL_FILE)
        for name in files:
            target = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            copy_file(os.path.join(model.folder, name), target, progress)


def pack(folder: str, path: str, progress=None) -> None:
    write_model(read_model(mil_source(folder), progress), path, progress)


def mil_source(folder: str) -> str:
    """The text an unpacked model is built from: `folder`/model.mil (or `folder`, a .mil file)."""
    source = os.path.join(folder, MIL_FILE) if os.path.isdir(folder) else folder
    if not os.path.isfile(source):
        raise InputError(f"{folder}: no {MIL_FILE} in it (make one with `miltext unpack MODEL {folder}`)")
    return source

