"""A relu folded into the conv before it: a conv whose output only the relu right after it
reads makes that output's negatives 0 itself, each part while it is in the cache of the thread
that computed it, and the relu's step only names the result. ResNet-18 has 9 such relus, each
a pass over memory of its own on the run's calling thread alone, its halves of a two-thread
conv's output in two cores' caches: folded, its runs took 1.0-1.1 ms less on two threads,
0.2-1.1 on one (same process, the runs interleaved). A relu is its own repeat (relu(relu(x))
is relu(x)), so a folded relu that runs anyway gives the same values.

An add folded into the conv before it the same way (a residual block's conv, add and relu):
the conv adds the add's other input (its `residual`) to each part as it writes it, and then
the add's relu; the add's step only names the result. Float addition is commutative, so the
values are the add's own whichever input the conv's output was.

Only in runs without an observer: one sees every op's own value, the conv's before its add or
relu."""
from __future__ import annotations

import numpy as np

# ops whose kernels apply a relu to their output when Args.relu is set
TAKES_RELU = frozenset({"conv", "add"})
# ops whose kernels add Args.residual to their output (before the relu)
TAKES_RESIDUAL = frozenset({"conv"})


def mark(steps: list) -> None:
    """Set `relu` on each step whose output a relu step right after it folds into, and
    `folded` (the name it reads) on that relu step: the one output of a conv or add that no op
    after the relu reads (nor the block's outputs), of the relu's dtype. Then set `residual`
    (the other input's name) on each conv whose output an add right after it folds into, with
    the add's relu, and `folded` on that add: the conv's one output, which no op after the add
    reads, of the add's declared type, added to a var an earlier step of the block made (so it
    is there when the conv runs)."""
    for before, step in zip(steps, steps[1:]):
        if step.op.type != "relu" or before.op.type not in TAKES_RELU or len(before.names) != 1:
            continue
        name = before.names[0]
        if (step.bindings.get("x") == [name] and name in step.last and len(step.names) == 1
                and before.dtypes[0] is not None and step.dtypes[0] == before.dtypes[0]):
            before.relu, step.folded = True, name
    made = set()
    for before, step in zip(steps, steps[1:]):
        if (step.op.type != "add" or before.op.type not in TAKES_RESIDUAL or len(before.names) != 1 or before.relu
                or len(step.names) != 1):
            made.update(before.names)
            continue
        name = before.names[0]
        x, y = step.bindings.get("x"), step.bindings.get("y")
        other = y if x == [name] else x if y == [name] else None
        if (other is not None and len(other) == 1 and type(other[0]) is str and other[0] in made and name in step.last
                and before.dtypes[0] is not None and step.dtypes[0] == before.dtypes[0]
                and step.op.outputs[0].type == before.op.outputs[0].type):
            before.residual, before.relu, step.folded = other[0], step.relu, name
        made.update(before.names)


def relu(y):
    """y's negatives made 0 in place, as the relu op makes them (NaN kept, -0 made 0): what a
    kernel that folds a relu in applies where it cannot in parts."""
    return np.maximum(y, 0, out=y)
