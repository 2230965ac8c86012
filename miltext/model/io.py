"""A model read from, or written to, whichever file a path names: `.mlpackage`, `.mlmodel`, a MIL
program `.pb`, or `.mil` text (with or without a model section)."""
from __future__ import annotations

import os

from ..errors import InputError, ProgramError, format_diagnostic
from ..files import claim_output, write_atomic
from ..progress import Silent
from .core import Model
from .mlmodel import model_to_bytes, read_mlmodel
from .package import OWNED, is_package, read_package, write_package
from .program_files import as_text, check_program_bytes, program_file
from .text import model_text, read_program_file

PACKAGE, MLMODEL, PROGRAM, TEXT = "package", "mlmodel", "program", "text"
_SUFFIXES = {".mlpackage": PACKAGE, ".mlmodel": MLMODEL, ".pb": PROGRAM, ".binpb": PROGRAM,
             ".mil": TEXT, ".txt": TEXT}


def kind_of(path: str) -> str | None:
    """What `path` holds, by what it is and its suffix (None: the suffix does not say)."""
    if is_package(path):
        return PACKAGE
    return _SUFFIXES.get(os.path.splitext(path.rstrip("/\\"))[1].lower())


STDIN = "-"           # the path that means standard input
STDIN_NAME = "<stdin>"  # what messages call it
TEXT_RATE = 4e6       # bytes of MIL text read per second, roughly: what the progress bar expects


def read_model(path: str, progress=None) -> Model:
    progress = progress or Silent()
    kind = kind_of(path)
    progress.stage("reading", seconds=_text_size(path, kind) / TEXT_RATE)
    progress.advance(0, f"reading {os.path.basename(path.rstrip('/'))}")
    if path == STDIN:
        model = _read_stdin()
    elif kind == PACKAGE:
        model = read_package(path)
    elif kind == MLMODEL:
        model = read_mlmodel(path)
    else:
        model = read_program_file(path)   # text or a program .pb, by suffix or content
    model.source = path
    return model


def display_name(path: str) -> str:
    """What messages call the file `path` names."""
    return STDIN_NAME if path == STDIN else path


def _text_size(path: str, kind) -> int:
    """The size of the text `path` holds (0 when it is not text, or not a plain file)."""
    if kind in (PACKAGE, MLMODEL, PROGRAM) or path == STDIN:
        return 0
    try:
        return os.path.getsize(program_file(path))
    except (OSError, InputError):
        return 0


def _read_stdin() -> Model:
    """MIL text on stdin (or a serialized program, when it is not UTF-8); `@model_path` is the
    current folder."""
    import sys

    from .text import parse_model
    data = sys.stdin.buffer.read()
    folder = os.getcwd()
    text = as_text(STDIN_NAME, data)
    if text is None:
        check_program_bytes(STDIN_NAME, data)
        return Model(folder=folder, program_proto=data)
    return parse_model(text, STDIN_NAME, folder)


def write_model(model: Model, path: str, progress=None, kind: str | None = None) -> None:
    """Write `model` as the `kind` of file `path` names (or as `kind`). A package gets the
    weight files of `model.folder`, each blob checked first; a .mlmodel or .pb cannot carry them."""
    from .derive import DescriptionError  # here: reading (git's textconv) needs neither
    from .weight_refs import WeightRefError
    progress = progress or Silent()
    kind = kind or kind_of(path)
    source = model.source or "<model>"
    # The text being built (with its weights beside it) is read while the output is written: it,
    # or a folder holding it, is never replaced. A package, .mlmodel or .pb is read whole first.
    text_source = model.source if model.source and kind_of(model.source) in (TEXT, None) else None
    claim_output(path, output_owned(kind), inputs=[text_source])
    try:
        if kind == PACKAGE:
            write_package(model, path, progress)
        elif kind == MLMODEL:
            _no_weights(model, path)
            write_atomic(path, model_to_bytes(model))
        elif kind == PROGRAM:
            write_atomic(path, model.program.to_bytes(strict=True))
        elif kind == TEXT:
            write_atomic(path, model_text(model).encode("utf-8"))
        else:
            raise InputError(f"{path}: write a .mlpackage, .mlmodel, .pb or .mil file")
    except (ProgramError, DescriptionError, WeightRefError) as e:
        raise InputError(located(source, e.loc, e.message)) from None


def output_owned(kind: str | None) -> tuple | None:
    """What miltext writes as an output of `kind`, for files.claim_output: the files of a
    package, or None for one file."""
    return OWNED if kind == PACKAGE else None


def _no_weights(model: Model, path: str) -> None:
    from .blobs import references
    refs = references(model.program)
    if refs:
        raise InputError(f"{path}: a .mlmodel file cannot carry weight files, and the program has "
                         f"{len(refs)} blob value(s) in {refs[0].blob.file}: write a .mlpackage")


def located(path: str, loc, message: str) -> str:
    if loc:
        return format_diagnostic(path, loc[0], loc[1], message, None)
    return f"{path}: error: {message}"
