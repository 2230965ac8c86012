"""Attention (iOS18's scaled_dot_product_attention), in fp32 at least."""
from __future__ import annotations

import math

import numpy as np

from ..registry import kernel
from .linear import wide


@kernel("scaled_dot_product_attention")
def scaled_dot_product_attention(a):
    q = np.asarray(a("query"))
    k, v = wide(a("key")), wide(a("value"))
    a.allow(np.broadcast_shapes(q.shape[:-1], k.shape[:-2] + (1,)) + k.shape[-2:-1], 4, "the attention scores")
    scores = wide(q) @ np.swapaxes(k, -1, -2) / math.sqrt(q.shape[-1])
    mask = a("attn_mask", None)
    if mask is not None:
        mask = np.asarray(mask)
        scores = np.where(mask, scores, -np.inf) if mask.dtype == bool else scores + wide(mask)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return (weights @ v).astype(q.dtype)
