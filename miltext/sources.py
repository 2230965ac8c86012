"""Reading a program from whatever file a user names: MIL text or a serialized MIL Program."""
from __future__ import annotations

import os

from google.protobuf.message import DecodeError

from .errors import ParseError
from .ir import Program

TEXT_SUFFIXES = (".mil", ".txt")
PROTO_SUFFIXES = (".pb", ".binpb")
COMPILED_TEXT = "model.mil"


class InputError(ValueError):
    """A file that cannot be read as a program; the message names the file and why."""


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
    path = program_file(path)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise InputError(f"{path}: cannot read: {e.strerror or e}") from None
    kind = _kind(path, data)
    if kind == "proto":
        program = program_from_bytes(path, data)
        return (None, program) if with_model else program
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{path}: not UTF-8 text (byte {e.start}) and not a MIL proto") from None
    from .text.parser import parse
    return parse(text, path, with_model=with_model)


def program_from_bytes(path: str, data: bytes) -> Program:
    try:
        return Program.from_proto(data)
    except DecodeError as e:
        raise _not_a_program(path, e) from None


def check_program_bytes(path: str, data: bytes) -> None:
    """Raise the InputError program_from_bytes would for bytes protobuf cannot read as a
    Program, without building the object model."""
    from .proto import schema
    try:
        schema.Program.FromString(data)
    except DecodeError as e:
        raise _not_a_program(path, e) from None


def _not_a_program(path: str, e: DecodeError) -> InputError:
    if "MaxDepth" in str(e):
        return InputError(f"{path}: the program is nested deeper than protobuf reads "
                          f"(100 message levels, about 45 nested blocks)")
    return InputError(f"{path}: not a MIL Program protobuf ({_reason(e)})")


def _reason(e: DecodeError) -> str:
    text = str(e)
    return "truncated or corrupt" if "Error parsing message" in text else text


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


__all__ = ["read_program", "program_file", "program_from_bytes", "check_program_bytes", "InputError", "ParseError"]
