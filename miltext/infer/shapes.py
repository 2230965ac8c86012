"""Shape arithmetic shared by the rules. A dim is an int, or a Sym or None (an unknown size:
a Sym is one the program has seen before, None a new one)."""
from __future__ import annotations

from ..ir import ListType, TensorType
from .errors import InferenceError
from .symbols import Sym, known

# The most elements an op's output may hold: past it, a size is a mistake (a `fill` of
# 2^31 - 1 by 2^31 - 1), which `run` could not allocate and Core ML would not load.
MAX_ELEMENTS = 2 ** 31 - 1


def within_bounds(types) -> None:
    """InferenceError when an output type has a negative size or more than MAX_ELEMENTS elements."""
    for t in types or ():
        if isinstance(t, ListType):
            t = t.element
        if not isinstance(t, TensorType) or t.rank is not None:
            continue
        sizes = [d for d in t.shape if type(d) is int]
        if any(d < 0 for d in sizes):
            raise InferenceError(f"it would give an output of shape {shape_text(t.shape)}, with a "
                                 "negative size")
        count = 1
        for d in sizes:
            count *= d
        if count > MAX_ELEMENTS:
            raise InferenceError(f"it would give an output of shape {shape_text(t.shape)}: {count:,} "
                                 f"elements, more than the {MAX_ELEMENTS:,} a tensor may hold")


def tensor(dtype: str, shape) -> TensorType:
    return TensorType(dtype, tuple(shape))


def broadcast(*shapes) -> tuple:
    """NumPy broadcasting of shapes with unknown dims: an unknown dim against 1 stays unknown,
    against n > 1 becomes n; two different known sizes (neither 1) do not broadcast."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        padded = (1,) * (rank - len(s)) + tuple(s)
        for i, (a, b) in enumerate(zip(out, padded)):
            out[i] = _broadcast_dim(a, b, shapes)
    return tuple(out)


def _broadcast_dim(a, b, shapes):
    if a == b or b == 1:
        return a
    if a == 1:
        return b
    if known(b) and b > 1:
        if known(a):
            raise InferenceError(f"shapes {' and '.join(map(shape_text, shapes))} do not broadcast")
        return b
    if known(a) and a > 1:
        return a
    if not known(a) or not known(b):
        return None     # two unknown sizes (or one and 0): a new unknown
    raise InferenceError(f"shapes {' and '.join(map(shape_text, shapes))} do not broadcast")


def axis(i: int, rank: int) -> int:
    """A possibly negative axis as an index into a shape of `rank` dims."""
    if not -rank <= i < max(rank, 1):
        raise InferenceError(f"axis {i} is out of range for rank {rank}")
    return i % rank if rank else 0


def shape_text(shape) -> str:
    return "(" + ", ".join(str(d) if known(d) else "?" for d in shape) + ")"


def add_dims(*dims):
    """The sum of dims, unknown when any is."""
    return sum(dims) if all(known(d) for d in dims) else None


def product(dims):
    """The product of dims as (int factor, sorted Sym keys), or None when a dim is a new unknown."""
    factor, syms = 1, []
    for d in dims:
        if known(d):
            factor *= int(d)
        elif isinstance(d, Sym):
            syms.append(d)
        else:
            return None
    return factor, syms
