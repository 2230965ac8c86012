"""Reading a program from whatever file a user names: MIL text or a serialized MIL Program."""
from __future__ import annotations

import os

from ..errors import InputError, ParseError, ProgramError
from ..files import decode_text, read_regular

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


def read_program(path: str, *, with_model: bool = False):
    """The program in `path`, by its suffix (or its content when the suffix says nothing).
    With `with_model`, (the text's model section or None, the program)."""
    return read_source(path, with_model=with_model)[0]


def read_source(path: str, *, with_model: bool = False):
    """(what read_program gives, the text it was parsed from, or None for a serialized one)."""
    path = program_file(path)
    data = read_regular(path)
    kind = _kind(path, data)
    if kind == "proto":
        program = program_from_bytes(path, data)
        return ((None, program) if with_model else program), None
    try:
        text = decode_text(data)
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start}) and not a MIL proto") from None
    del data  # a big file is not held twice while it is parsed
    from ..text.dialects import parse
    return parse(text, path, with_model=with_model), text


def program_from_bytes(path: str, data: bytes) -> "Program":
    from ..ir import Program
    try:
        return Program.from_proto(data)
    except ProgramError as e:
        raise InputError(f"{path}: {e.message}") from None


def check_program_bytes(path: str, data: bytes) -> None:
    """Raise the InputError program_from_bytes would for bytes protobuf cannot read as a
    Program, without building the object model."""
    from ..ir.decode import program_message
    try:
        program_message(data)
    except ProgramError as e:
        raise InputError(f"{path}: {e.message}") from None


def _kind(path: str, data: bytes) -> str:
    suffix = os.path.splitext(path)[1].lower()
    if suffix in PROTO_SUFFIXES:
        return "proto"
    if suffix in TEXT_SUFFIXES:
        return "text"
    try:
        data.decode("utf-8")
        return "text"
    except UnicodeDecodeError:
        return "proto"


__all__ = ["read_program", "read_source", "program_file", "program_from_bytes", "check_program_bytes", "InputError", "ParseError"]
