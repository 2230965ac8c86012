"""Ops whose definitions allow only some ranks, and their per-channel parameters: prelu,
softplus_parametric, l2_norm, local_response_norm, l2_pool."""
from __future__ import annotations

from . import Mistake, rule
from .common import shown

# op -> (lowest rank of x, highest or None), as coremltools' op definitions state them
RANKS = {"prelu": (3, 5), "softplus_parametric": (3, None), "l2_norm": (3, None),
         "local_response_norm": (3, None), "l2_pool": (3, 4)}


@rule(*RANKS)
def rank_of_x(ops):
    x = ops.tensor("x")
    low, high = RANKS[ops.op.type]
    if len(x.shape) < low or high is not None and len(x.shape) > high:
        span = f"{low} to {high}" if high is not None else f"{low} or more"
        raise Mistake("x", f"{ops.op.type} takes x of rank {span}, not {len(x.shape)} ({shown(x)})")


@rule("prelu", "softplus_parametric")
def per_channel_parameters(ops):
    x = ops.tensor("x")
    for key in ("alpha", "beta"):
        if not ops.has(key):
            continue
        t = ops.tensor(key)
        if len(t.shape) != 1 or (t.shape[0] is not None and len(x.shape) > 1 and x.shape[1] is not None
                                 and t.shape[0] != x.shape[1]):
            raise Mistake(key, f"{key} must be ({x.shape[1] if len(x.shape) > 1 else '?'}), one value per "
                               f"channel (dim 1) of x {shown(x)}, not {shown(t)}")
