"""scaled_dot_product_attention: softmax(Q K^T / sqrt(d) + mask) V with the dialect's batch
matmul; a boolean mask lets through where it is true (elsewhere -inf)."""
from __future__ import annotations

import numpy as np

from ..table import lowers
from .common import binary, cast, name_of, scalar, transpose
from .linear import _matmul


@lowers("scaled_dot_product_attention")
def sdpa(low, op):
    q, k, v = low.tensor(op, "query"), low.tensor(op, "key"), low.tensor(op, "value")
    rank = len(k.shape)
    kt = transpose(low, k, list(range(rank - 2)) + [rank - 1, rank - 2])
    scores = _matmul(low, q, kt, "scores")
    scores = binary(low, "mul", scores, scalar(low, 1 / np.sqrt(q.shape[-1]), q.dtype))
    if low.has(op, "attn_mask"):
        m = low.tensor(op, "attn_mask")
        if m.dtype == "bool":
            zero = low.constant(np.zeros(m.shape), q.dtype, "zeros")
            ninf = low.constant(np.full(m.shape, -np.inf), q.dtype, "ninf")
            m = low.emit("where", [m, zero, ninf], (q.dtype, m.shape))
        scores = binary(low, "add", scores, cast(low, m, q.dtype))
    weights = low.emit("softmax", [scores, low.ints(-1, "axis")], (scores.dtype, scores.shape))
    low.bind(op, _matmul(low, weights, v, name_of(op)))
