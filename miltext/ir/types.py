"""Types of MIL values, one class per `ValueType` case of MIL.proto.

A field the proto leaves unset is `None` here (for a `ValueType`) or `MISSING` (for a list's
length); a message that is present but empty has its own spelling (`UnknownType`, `UNSET_DIM`),
because the proto keeps the difference and so must we.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Union

if TYPE_CHECKING:
    from .values import Value


class _Sentinel:
    __slots__ = ("_name",)

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return self._name

    def __reduce__(self):
        return self._name


VARIADIC = _Sentinel("VARIADIC")    # Dimension.unknown with variadic = true
UNSET_DIM = _Sentinel("UNSET_DIM")  # a Dimension message with neither case set
MISSING = _Sentinel("MISSING")      # ListType.length not set at all

class _NoAttributes(dict):
    """The attributes of a type that has none. One shared, read-only empty mapping: a big
    program has a type per var and per value, and an empty dict each would cost megabytes."""
    __slots__ = ()

    def _refuse(self, *args, **kwargs):
        raise TypeError("a type made without attributes shares this empty mapping: "
                        "give the type a dict of its own to add attributes")

    __setitem__ = __delitem__ = __ior__ = setdefault = update = pop = popitem = clear = _refuse

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def __reduce__(self):
        return "NO_ATTRIBUTES"


NO_ATTRIBUTES = _NoAttributes()

# A dimension: an int (constant size), None (unknown size), VARIADIC or UNSET_DIM.
Dim = Union[int, None, _Sentinel]


@dataclass(eq=True, slots=True)
class TensorType:
    """A tensor's type. Types are values: the readers share one instance between every var
    and value of the same type, so a type is never changed in place (make a new one)."""
    dtype: str                       # a dtypes name: "fp32", "int4", ...
    shape: tuple = ()                # Dims, outermost first; () for a scalar
    rank: int | None = None          # None: len(shape); set only when the proto says otherwise
    attributes: dict[str, "Value"] = field(default_factory=lambda: NO_ATTRIBUTES)

    def __post_init__(self):
        self.shape = tuple(self.shape)
        if self.rank == len(self.shape):
            self.rank = None  # the rank the shape gives needs no saying

    @property
    def proto_rank(self) -> int:
        return len(self.shape) if self.rank is None else self.rank

    @property
    def is_static(self) -> bool:
        return all(type(d) is int for d in self.shape) and self.rank is None

    @property
    def element_count(self) -> int | None:
        """How many elements a value of this type holds; None when the shape does not say."""
        if not self.is_static:
            return None
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(eq=True, slots=True)
class ListType:
    element: "ValueType | None"
    length: object = None            # a Dim, or MISSING when the proto has no length


@dataclass(eq=True, slots=True)
class TupleType:
    types: list = field(default_factory=list)


@dataclass(eq=True, slots=True)
class DictType:
    key: "ValueType | None"
    value: "ValueType | None"


@dataclass(eq=True, slots=True)
class StateType:
    wrapped: "ValueType | None"


@dataclass(eq=True, slots=True)
class UnknownType:
    """A ValueType message with no case set (coremltools' `unknown`)."""


ValueType = Union[TensorType, ListType, TupleType, DictType, StateType, UnknownType]
