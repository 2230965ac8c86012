"""Unknown sizes that keep their identity while inference walks a program, as coremltools'
symbols do: the `?` of an input's length is one `Sym`, the same object in every shape it flows
into and in the values `shape`, `gather` and `concat` compute from it, so that a reshape to
`[batch, length, 4, -1]` of a `(batch, length, 32)` tensor knows its last dim is 8. Written
into the program, every Sym is `?` (None)."""
from __future__ import annotations

import itertools

import numpy as np

from ..ir import ListType, StateType, TensorType, TupleType

_fresh = itertools.count()


class Sym:
    """An unknown size; equal only to itself (or to the same expression of the same Syms)."""
    __slots__ = ("key",)

    def __init__(self, key=None):
        self.key = next(_fresh) if key is None else key

    def __eq__(self, other):
        return isinstance(other, Sym) and self.key == other.key

    def __hash__(self):
        return hash(("sym", self.key))

    def __repr__(self):
        return f"s{self.key}"


def known(d) -> bool:
    """Whether a dim (or a value's element) is a known integer."""
    return isinstance(d, (int, np.integer)) and not isinstance(d, bool)


def derived(op: str, *parts) -> Sym:
    """The Sym of an expression of sizes: the same expression of the same sizes is the same Sym."""
    return Sym((op,) + tuple(p.key if isinstance(p, Sym) else p.item() if hasattr(p, "item") else p for p in parts))


def symbolic(t, declared=None):
    """Type `t` with every unknown dim a Sym: kept where `t` has one, fresh otherwise. With
    `declared` (the type the text writes), its known dims win and its `?` take `t`'s Syms."""
    if declared is not None:
        if isinstance(declared, TensorType) and isinstance(t, TensorType) and declared.rank is None \
                and t.rank is None and len(declared.shape) == len(t.shape):
            return TensorType(declared.dtype, tuple(
                d if d is not None else (s if isinstance(s, Sym) else Sym())
                for d, s in zip(declared.shape, t.shape)), attributes=declared.attributes)
        return symbolic(declared)
    if isinstance(t, TensorType):
        if t.rank is not None or all(type(d) is int for d in t.shape):
            return t
        return TensorType(t.dtype, tuple(Sym() if d is None else d for d in t.shape),
                          attributes=t.attributes)
    if isinstance(t, StateType):
        return StateType(symbolic(t.wrapped))
    return t


def concrete(t):
    """Type `t` as the program writes it: every Sym `?`."""
    if isinstance(t, TensorType):
        if not any(isinstance(d, Sym) for d in t.shape):
            return t
        return TensorType(t.dtype, tuple(None if isinstance(d, Sym) else d for d in t.shape),
                          rank=t.rank, attributes=t.attributes)
    if isinstance(t, StateType):
        return StateType(concrete(t.wrapped))
    if isinstance(t, ListType):
        element = concrete(t.element)
        return t if element is t.element else ListType(element, t.length)
    if isinstance(t, TupleType):
        return TupleType([concrete(x) for x in t.types])
    return t


def fully_known(value) -> bool:
    """Whether every element of a value is known (none is a Sym)."""
    return value is not None and not (value.dtype == object and any(isinstance(v, Sym) for v in value.reshape(-1)))
