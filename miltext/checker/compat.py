"""When two types agree, leniently: what is unknown on either side agrees with anything."""
from __future__ import annotations

from ..ir import DictType, ListType, StateType, TensorType, TupleType, UnknownType
from ..text.mil.printer import type_text


def compatible(a, b) -> bool:
    if a is None or b is None or isinstance(a, UnknownType) or isinstance(b, UnknownType):
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, TensorType):
        if a.dtype != b.dtype:
            return False
        if a.proto_rank < 0 or b.proto_rank < 0:
            return True
        if a.proto_rank != b.proto_rank or len(a.shape) != len(b.shape):
            return False
        return all(x == y for x, y in zip(a.shape, b.shape) if type(x) is int and type(y) is int)
    if isinstance(a, StateType):
        return compatible(a.wrapped, b.wrapped)
    if isinstance(a, ListType):
        same_length = not (type(a.length) is int and type(b.length) is int) or a.length == b.length
        return same_length and compatible(a.element, b.element)
    if isinstance(a, TupleType):
        return len(a.types) == len(b.types) and all(map(compatible, a.types, b.types))
    if isinstance(a, DictType):
        return compatible(a.key, b.key) and compatible(a.value, b.value)
    return a == b


def describe(t) -> str:
    """A type as the text writes it."""
    return "no type" if t is None else type_text(t)


