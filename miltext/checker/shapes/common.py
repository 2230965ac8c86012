"""Words and small checks the shape rules share."""
from __future__ import annotations

from ...infer.shapes import shape_text
from . import Mistake


def axis_in(ops, key: str, rank: int, *, default=..., extra: int = 0) -> int | None:
    """Input `key` as an axis of a tensor of `rank` (+ `extra` for ops that add dims), or None
    when it is not given or not known."""
    a = ops.scalar(key, default=None if default is ... else default, of=int)
    if a is None or not isinstance(a, int):
        return None
    n = rank + extra
    if not -n <= a < max(n, 1):
        raise Mistake(key, f"axis {a} is out of range for a tensor of rank {n} "
                           f"(axes go from {-n} to {n - 1})" if n else f"axis {a} is out of range for a scalar")
    return a % n if n else 0


def axes_in(ops, key: str, rank: int, *, extra: int = 0) -> list | None:
    axes = ops.ints(key, default=None)
    if axes is None:
        return None
    n = rank + extra
    out = []
    for a in axes:
        if a is None:
            return None
        if not -n <= a < n:
            raise Mistake(key, f"axis {a} is out of range for a tensor of rank {n} "
                               f"(axes go from {-n} to {n - 1})" if n else f"axis {a} is out of range "
                               "for a scalar, which has no axes")
        out.append(a % n)
    return out


def known(d) -> bool:
    return d is not None


def shown(t) -> str:
    return shape_text(t.shape)
