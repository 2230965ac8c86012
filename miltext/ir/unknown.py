"""Fields of a MIL program that this schema does not know (a newer writer's), kept as protobuf
read them so that proto -> text -> proto gives the same bytes.

They live in Program.unknown_fields: the path of the message that holds them -> their wire
bytes. A path is a JSON list of the steps from the Program message down: a field name, then a
map key or a list index where the field has them, e.g.
`["functions", "main", "block_specializations", "CoreML7", "operations", 0, "outputs", 0, "type"]`
(`[]` is the Program itself). protobuf writes unknown fields after the known ones, which is
where a newer writer's higher-numbered fields are, so merging the bytes back gives the bytes
that were read.
"""
from __future__ import annotations

import json

from ..errors import ProgramError


def unknown_bytes(msg) -> bytes:
    """The fields of `msg` (itself only, not its parts) that its schema does not know, as bytes."""
    rest = type(msg)()
    rest.CopyFrom(msg)
    for field, _ in rest.ListFields():
        rest.ClearField(field.name)
    return rest.SerializeToString()


def has_unknown(msg) -> bool:
    """Whether any message in `msg` has unknown fields (one copy and two sizes, all in C)."""
    known = type(msg)()
    known.CopyFrom(msg)
    known.DiscardUnknownFields()
    return known.ByteSize() != msg.ByteSize()


def collect(msg) -> dict[str, bytes]:
    """Every message in `msg` that has unknown fields: path -> their bytes."""
    found: dict[str, bytes] = {}
    _walk(msg, [], found)
    return found


def parts(msg):
    """The messages directly inside `msg`, each with the steps of the path to it (a field name,
    then a map key or a list index where the field has them)."""
    for field, value in msg.ListFields():
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            if field.message_type.fields_by_name["value"].message_type is not None:
                for key in sorted(value):
                    yield [field.name, key], value[key]
        elif field.is_repeated:
            for i, item in enumerate(value):
                yield [field.name, i], item
        else:
            yield [field.name], value


def _walk(msg, path: list, found: dict) -> None:
    if not has_unknown(msg):
        return
    raw = unknown_bytes(msg)
    if raw:
        found[json.dumps(path)] = raw
    for steps, part in parts(msg):
        _walk(part, path + steps, found)


def apply(msg, table: dict) -> None:
    """Merge each entry of `table` (path -> bytes) into the message of `msg` its path names.
    ProgramError for a path that names no part of the message, or bytes that are not unknown
    fields of the message there."""
    for path, raw in table.items():
        target = _find(msg, path)
        probe = type(target)()
        try:
            probe.MergeFromString(bytes(raw))
        except Exception:  # protobuf's DecodeError, or a wire type that does not fit
            raise ProgramError(f"unknownFields {path}: the bytes are not protobuf fields") from None
        if probe.ListFields():
            raise ProgramError(f"unknownFields {path}: the bytes hold fields this schema knows "
                               f"({', '.join(f.name for f, _ in probe.ListFields())}), not unknown ones")
        target.MergeFromString(bytes(raw))


def _find(msg, path: str):
    try:
        steps = json.loads(path)
    except ValueError:
        steps = None
    if not isinstance(steps, list):
        raise ProgramError(f"unknownFields {path!r}: a path is a JSON list of field names, keys and indexes")
    at, i = msg, 0
    while i < len(steps):
        name = steps[i]
        field = at.DESCRIPTOR.fields_by_name.get(name) if isinstance(name, str) else None
        if field is None or field.message_type is None:
            raise ProgramError(f"unknownFields {path}: {name!r} is no message field of {at.DESCRIPTOR.name}")
        value = getattr(at, name)
        if field.message_type.GetOptions().map_entry or field.is_repeated:
            key = steps[i + 1] if i + 1 < len(steps) else None
            present = (key in value) if field.message_type.GetOptions().map_entry and isinstance(key, str) \
                else isinstance(key, int) and not isinstance(key, bool) and 0 <= key < len(value)
            if not present:
                raise ProgramError(f"unknownFields {path}: {name} has no {json.dumps(key)}")
            at, i = value[key], i + 2
        else:
            if not at.HasField(name):
                raise ProgramError(f"unknownFields {path}: {at.DESCRIPTOR.name} has no {name}")
            at, i = value, i + 1
    return at
