"""Random ops. A given seed (not -1) makes a run repeatable; the draws are NumPy's, so they
match the distribution the definition names, never Core ML's own numbers."""
from __future__ import annotations

import numpy as np

from ..errors import RunError
from ..registry import kernel


def _rng(a):
    seed = a.scalar("seed", -1)
    return np.random.default_rng(None if seed == -1 else seed)


def _dtype(a):
    return a.out_dtype() or np.float32


def _shape(a):
    """The shape input, once a draw of it (fp64 before the cast) fits in --max-memory."""
    shape = a.ints("shape")
    a.allow(shape, 8)
    return shape


@kernel("random_normal")
def random_normal(a):
    return _rng(a).normal(a.scalar("mean", 0.0), a.scalar("stddev", 1.0), _shape(a)).astype(_dtype(a))


@kernel("random_uniform")
def random_uniform(a):
    return _rng(a).uniform(a.scalar("low", 0.0), a.scalar("high", 1.0), _shape(a)).astype(_dtype(a))


@kernel("random_bernoulli")
def random_bernoulli(a):
    return (_rng(a).random(_shape(a)) < a.scalar("prob", 0.5)).astype(_dtype(a))


@kernel("random_categorical")
def random_categorical(a):
    """`size` class indices per row of x's last dim, drawn from its probabilities (or logits)."""
    x = np.asarray(a("x"), np.float64)
    mode, size = str(a.scalar("mode", "logits")), a.scalar("size", 1)
    if mode == "logits":
        p = np.exp(x - x.max(axis=-1, keepdims=True))
    elif mode == "probs":
        p = x.copy()
    else:
        raise RunError(f"mode {mode!r} is neither logits nor probs")
    p /= p.sum(axis=-1, keepdims=True)
    rows = p.reshape(-1, p.shape[-1])
    a.allow((rows.shape[0], size), 8)
    rng = _rng(a)
    # inverse CDF: a uniform draw's position in each row's cumulative sum
    cdf = np.cumsum(rows, axis=-1)
    draws = rng.random((rows.shape[0], size))
    picks = np.stack([np.searchsorted(c, d, side="right") for c, d in zip(cdf, draws)]) if len(rows) else \
        np.zeros((0, size), np.int64)
    picks = np.minimum(picks, rows.shape[-1] - 1)
    return picks.reshape(x.shape[:-1] + (size,)).astype(_dtype(a))
