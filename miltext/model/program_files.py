"""Files that hold a program alone: which file that is (a compiled model's model.mil), whether
it holds MIL text or a serialized MIL Program, and whether those bytes read as a Program.
model.text.read_program_file reads one with these."""
from __future__ import annotations

import os

from ..errors import InputError, ProgramError
from ..files import decode_text

TEXT_SUFFIXES = (".mil", ".txt")
PROTO_SUFFIXES = (".pb", ".binpb")
COMPILED_TEXT = "model.mil"


def program_file(path: str) -> str:
    """The file that holds the program `path` names: for a folder (a compiled model
    NAME.mlmodelc, whose program Core ML's compiler writes as model.mil), its model.mil."""
    if not os.path.isdir(path):
        return path
    inner = os.path.join(path, COMPILED_TEXT)
    if not os.path.isfile(inner):
        raise InputError(f"{path}: a folder without {COMPILED_TEXT} (a compiled model, NAME.mlmodelc, has one)")
    return inner


def as_text(name: str, data: bytes) -> str | None:
    """`data` as text, or None when it is a serialized program: by the suffix of `name`, else
    by whether it is UTF-8."""
    suffix = os.path.splitext(name)[1].lower()
    if suffix in PROTO_SUFFIXES:
        return None
    try:
        return decode_text(data)
    except UnicodeDecodeError as e:
        if suffix in TEXT_SUFFIXES:
            raise InputError(f"{name}: not UTF-8 text (byte {e.start}) and not a MIL proto") from None
        return None


def check_program_bytes(path: str, data: bytes) -> None:
    """InputError for bytes protobuf cannot read as a Program, without building the object model."""
    from ..ir.decode import program_message
    try:
        program_message(data)
    except ProgramError as e:
        raise InputError(f"{path}: {e.message}") from None


__all__ = ["program_file", "as_text", "check_program_bytes", "InputError"]
