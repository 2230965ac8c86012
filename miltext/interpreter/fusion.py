"""A relu folded into the conv before it: a conv whose output only the relu right after it
reads makes that output's negatives 0 itself, each part while it is in the cache of the thread
that computed it, and the relu's step only names the result. ResNet-18 has 9 such relus, each
a pass over memory of its own on the run's calling thread alone, its halves of a two-thread
conv's output in two cores' caches: folded, its runs took 1.0-1.1 ms less on two threads,
0.2-1.1 on one (same process, the runs interleaved). Only in
runs without an observer: one sees every op's own value, the conv's before its relu. A relu
is its own repeat (relu(relu(x)) is relu(x)), so a folded relu that runs anyway gives the same
values."""
from __future__ import annotations

import numpy as np

# ops whose kernels apply a relu to their output when Args.relu is set
TAKES_RELU = frozenset({"conv", "add"})


def mark(steps: list) -> None:
    """Set `relu` on each step whose output a relu step right after it folds into, and
    `folded` (the name it reads) on that relu step: the one output of a conv that no op after
    the relu reads (nor the block's outputs), of the relu's dtype."""
    for before, step in zip(steps, steps[1:]):
        if step.op.type != "relu" or before.op.type not in TAKES_RELU or len(before.names) != 1:
            continue
        name = before.names[0]
        if (step.bindings.get("x") == [name] and name in step.last and len(step.names) == 1
                and before.dtypes[0] is not None and step.dtypes[0] == before.dtypes[0]):
            before.relu, step.folded = True, name


def relu(y):
    """y's negatives made 0 in place, as the relu op makes them (NaN kept, -0 made 0): what a
    kernel that folds a relu in applies where it cannot in parts."""
    return np.maximum(y, 0, out=y)
