"""How far apart two values of a var may be, by dtype, and how far apart they are.

An element is within tolerance when |a - b| <= atol + rtol * |b| (b the reference: model B's
value, or the one given with --against); equal values are (infinities of one sign, NaN and
NaN too), and a non-finite value facing another value is not. The defaults are looser than
`run --expect`'s, because an intermediate value carries the rounding of every op before it:
fp16 has 11 bits of precision, bf16 8; integers and booleans must be equal.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# (rtol, atol) by the less precise of the two dtypes
DEFAULTS = {"float64": (1e-6, 1e-8), "float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3), "bfloat16": (5e-2, 1e-2)}
EXACT = (0.0, 0.0)
_PRECISION = ("bfloat16", "float16", "float32", "float64")   # least precise first


def tolerance(a_dtype, b_dtype, rtol: float | None = None, atol: float | None = None) -> tuple:
    """(rtol, atol) for values of these dtypes; `rtol`/`atol` given override the defaults."""
    names = {str(a_dtype), str(b_dtype)}
    found = next((DEFAULTS[n] for n in _PRECISION if n in names), EXACT)
    return (found[0] if rtol is None else rtol), (found[1] if atol is None else atol)


@dataclass(slots=True)
class Measure:
    max_abs: float
    max_rel: float       # |a - b| / max(|b|, atol): relative to b, or to atol where b is smaller
    outside: int         # elements outside tolerance
    size: int
    rtol: float
    atol: float

    @property
    def within(self) -> bool:
        return self.outside == 0


def comparable(a, b) -> str | None:
    """Why the two arrays cannot be compared element by element, or None when they can."""
    if a.shape != b.shape:
        return f"shapes differ: {a.shape} and {b.shape}"
    if (a.dtype.kind == "f") != (b.dtype.kind == "f"):
        return f"{a.dtype} and {b.dtype} hold different kinds of numbers"
    return None


def measure(a, b, rtol: float | None = None, atol: float | None = None) -> Measure:
    """How far `a` is from `b` (arrays of one shape: see comparable)."""
    rtol, atol = tolerance(a.dtype, b.dtype, rtol, atol)
    if a.dtype == b.dtype and np.array_equal(a, b):
        return Measure(0.0, 0.0, 0, a.size, rtol, atol)
    x, y = np.asarray(a, np.float64).reshape(-1), np.asarray(b, np.float64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        err = np.abs(x - y)
        same = (x == y) | (np.isnan(x) & np.isnan(y))
        err[same] = 0.0
        err[np.isnan(err)] = np.inf
        outside = ~same & ((err > atol + rtol * np.abs(y)) | ~np.isfinite(err))
        rel = np.where(err == 0, 0.0, err / np.maximum(np.abs(y), atol))
        rel[np.isnan(rel)] = np.inf       # inf against inf of the other sign, x against 0 with atol 0
    if not err.size:
        return Measure(0.0, 0.0, 0, 0, rtol, atol)
    return Measure(float(err.max()), float(rel.max()), int(outside.sum()), a.size, rtol, atol)


def summary(a) -> dict:
    """NaN and inf counts and the range of the finite values of an array."""
    if a.dtype.kind != "f":
        return {"nan": 0, "inf": 0, "range": [float(a.min()), float(a.max())] if a.size else None}
    finite = np.isfinite(a)
    nan = int(np.isnan(a).sum())
    kept = a[finite]
    return {"nan": nan, "inf": int(a.size - finite.sum() - nan),
            "range": [float(kept.min()), float(kept.max())] if kept.size else None}
