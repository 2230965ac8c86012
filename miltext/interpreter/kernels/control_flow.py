"""Control flow: cond runs one of its two blocks; while_loop runs its body while its condition
block says so, the loop vars carried from each pass to the next."""
from __future__ import annotations

import numpy as np

from ..errors import RunError
from ..registry import kernel

MAX_ITERATIONS = 10_000_000   # a loop that never ends is an error, not a hang (--timeout bounds time)


@kernel("cond")
def cond(a):
    taken = bool(np.asarray(a("pred")).reshape(-1)[0])
    outputs = a.block(0 if taken else 1, [])
    return tuple(outputs) if len(outputs) != 1 else outputs[0]


@kernel("while_loop")
def while_loop(a):
    values = a.many("loop_vars")
    limits = a.evaluator.limits
    passes = [0]
    limits.loops.append((a.op, passes))     # a timeout inside names the innermost loop running
    try:
        for passes[0] in range(MAX_ITERATIONS):
            limits.check_time(a.op)
            (go,) = a.block(0, values)
            if not bool(np.asarray(go).reshape(-1)[0]):
                return tuple(values) if len(values) != 1 else values[0]
            values = a.block(1, values)
    finally:
        limits.loops.pop()
    raise RunError(f"while_loop ran {MAX_ITERATIONS:,} times without ending")
