"""Reductions over `axes` (all axes when left out), `keep_dims` as the definitions say."""
from __future__ import annotations

import numpy as np

from ..registry import kernel
from .linear import wide


def _reduction(fn):
    def run(a):
        x = np.asarray(a("x"))
        axes = a.ints("axes", None)
        axes = None if axes is None else tuple(ax % x.ndim for ax in axes) if x.ndim else None
        keep = bool(a.scalar("keep_dims", False))

        def compute(x):     # a run keeps NumPy's warnings off
            return np.asarray(fn(wide(x), axes, keep)).astype(x.dtype)
        return a.replayable(compute, "x")(x)
    return run


_REDUCTIONS = {
    "reduce_sum": lambda x, ax, k: x.sum(axis=ax, keepdims=k),
    "reduce_mean": lambda x, ax, k: x.mean(axis=ax, keepdims=k),
    "reduce_max": lambda x, ax, k: x.max(axis=ax, keepdims=k),
    "reduce_min": lambda x, ax, k: x.min(axis=ax, keepdims=k),
    "reduce_prod": lambda x, ax, k: x.prod(axis=ax, keepdims=k),
    "reduce_l1_norm": lambda x, ax, k: np.abs(x).sum(axis=ax, keepdims=k),
    "reduce_l2_norm": lambda x, ax, k: np.sqrt((x * x).sum(axis=ax, keepdims=k)),
    "reduce_sum_square": lambda x, ax, k: (x * x).sum(axis=ax, keepdims=k),
    "reduce_log_sum": lambda x, ax, k: np.log(x.sum(axis=ax, keepdims=k)),
    "reduce_log_sum_exp": lambda x, ax, k: _log_sum_exp(x, ax, k),
}


def _log_sum_exp(x, axes, keep):
    """log(sum(exp(x))) shifted by the max, so large values do not overflow exp; an infinite
    max is the answer itself (inf - inf would be NaN)."""
    m = x.max(axis=axes, keepdims=True)
    shift = np.where(np.isfinite(m), m, 0)
    out = shift + np.log(np.exp(x - shift).sum(axis=axes, keepdims=True))
    out = np.where(np.isinf(m), m, out)
    return out if keep else np.squeeze(out, axis=axes)

for _name, _fn in _REDUCTIONS.items():
    kernel(_name)(_reduction(_fn))


def _arg(fn):
    def run(a):
        x = np.asarray(a("x"))
        axis = a.scalar("axis", -1)
        out = fn(x, axis=axis)
        if a.scalar("keep_dims", False):
            out = np.expand_dims(out, axis)
        return out.astype(a.out_dtype() or np.int32)
    return run


kernel("reduce_argmax")(_arg(np.argmax))
kernel("reduce_argmin")(_arg(np.argmin))


@kernel("cumsum")
def cumsum(a):
    x = np.asarray(a("x"))
    axis = a.scalar("axis", 0)
    if a.scalar("reverse", False):
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis)
    if a.scalar("exclusive", False):
        # shifted one step, a zero first (subtracting x would turn an inf into NaN)
        shifted = np.zeros_like(out)
        lead = [slice(None)] * out.ndim
        lead[axis] = slice(1, None)
        tail = list(lead)
        tail[axis] = slice(None, -1)
        shifted[tuple(lead)] = out[tuple(tail)]
        out = shifted
    if a.scalar("reverse", False):
        out = np.flip(out, axis)
    return out.astype(x.dtype)
