"""Attention (iOS18's scaled_dot_product_attention), in fp32 at least."""
from __future__ import annotations

import math

import numpy as np

from ..blas_threads import sized
from ..registry import kernel
from .linear import wide


@kernel("scaled_dot_product_attention")
def scaled_dot_product_attention(a):
    q = np.asarray(a("query"))
    k, v = wide(a("key")), wide(a("value"))
    a.allow(np.broadcast_shapes(q.shape[:-1], k.shape[:-2] + (1,)) + k.shape[-2:-1], 4, "the attention scores")
    with sized(q.size // max(q.shape[-1], 1) * k.shape[-2] * (q.shape[-1] + v.shape[-1])):   # both products
        scores = wide(q) @ np.swapaxes(k, -1, -2)
        scores /= math.sqrt(q.shape[-1])
        mask = a("attn_mask", None)
        if mask is not None:
            mask = np.asarray(mask)
            scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + wide(mask)
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores, out=scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        return (weights @ v).astype(q.dtype, copy=False)
