"""scaled_dot_product_attention: one row per query, one column per value feature."""
from __future__ import annotations

from ..registry import rule
from ..shapes import broadcast, tensor


@rule("scaled_dot_product_attention")
def scaled_dot_product_attention(ops):
    q, k, v = ops.tensor("query"), ops.tensor("key"), ops.tensor("value")
    batch = broadcast(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    return [tensor(q.dtype, batch + (q.shape[-2], v.shape[-1]))]
