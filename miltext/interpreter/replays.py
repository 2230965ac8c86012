"""Replays: a small op computed straight from its inputs on the runs after its first.

A decoder of small ops spends more on each kernel's bookkeeping (reading its inputs and
literals, checking sizes, choosing a path) than on its arithmetic. A kernel that can say what
it computes as a function of some of its inputs, all else fixed by the op's literals (weights,
axes, modes), offers that function (`Args.replayable`). The evaluator keeps it with the step
when the op is small (every output declared, static, at most SMALL_OUTPUT bytes), every other
input is a literal and the results take their declared dtypes. A later run whose inputs have
the same shapes, strides and dtypes calls it and skips the kernel; any other input runs the
kernel, which offers a new one. Big ops always run their kernels: those reuse spent inputs
and share work between threads, which a replay does not.

A block whose every step replayed on its last run is a Chain: when the values it reads from
outside have the layout they had then, each step's inputs have theirs too (a replay's output
layout follows from its inputs'), and every step replays with no check at all, the block
compiled to one Python function that keeps its values in local variables (the loop's own
bookkeeping costs a small op more than its arithmetic)."""
from __future__ import annotations

from time import monotonic

import numpy as np

from .args import Literal
from .errors import KERNEL_FAILURES

SMALL_OUTPUT = 1 << 16     # bytes: the largest output of an op that may be replayed


class Replay:
    """`compute` and the inputs it takes: fixed values, and the names read from a run's
    values with the shape, strides and dtype they must have (`inputs`: each input as a name
    to read or None and its fixed value)."""
    __slots__ = ("compute", "fixed", "reads", "names", "inputs")

    def __init__(self, compute, fixed: list, reads: tuple, names: list):
        self.compute, self.fixed, self.reads, self.names = compute, fixed, reads, names
        self.inputs = [(None, value) for value in fixed]
        for index, name, *_ in reads:
            self.inputs[index] = (name, None)

    def run(self, env) -> bool:
        """The op's outputs put in `env`; False (nothing done) when an input is not as it was."""
        values = self.fixed.copy()
        for index, name, shape, strides, dtype in self.reads:
            v = env[name]
            if type(v) is not np.ndarray or v.shape != shape or v.strides != strides or v.dtype != dtype:
                return False
            values[index] = v
        result = self.compute(*values)
        names = self.names
        if len(names) == 1:
            env[names[0]] = result
        else:
            for name, value in zip(names, result):
                env[name] = value
        return True


class Chain:
    """The names a block's steps read from outside it, and `layout`: each one's shape,
    strides and dtype on a run of the block that replayed every step (None: no such run
    since the last one that ran a kernel), with `run`, the block compiled for it:
    run(env, deadline, late, failure) gives the block's outputs, calling late(i) once the
    monotonic clock passes `deadline` before step i, and raising failure(i, e) for an error
    e of step i."""
    __slots__ = ("outside", "layout", "run")

    def __init__(self, outside: list):
        self.outside, self.layout, self.run = outside, None, None

    def settle(self, layout: list | None, steps: list, outputs: list) -> None:
        """The layout of the outside values on a run that replayed every step (None: a run
        that did not), and the block compiled for it."""
        if layout is None or layout != self.layout or self.run is None:
            self.run = None if layout is None else _compiled(steps, outputs)
        self.layout = layout

    def now(self, env) -> list | None:
        """The outside values' layout in `env` (None when one is no array)."""
        layout = []
        for name in self.outside:
            v = env[name]
            if type(v) is not np.ndarray:
                return None
            layout.append((v.shape, v.strides, v.dtype))
        return layout

    def holds(self, env) -> bool:
        """Whether every step may replay unchecked on the values of `env`."""
        return self.layout is not None and self.now(env) == self.layout


def _compiled(steps: list, outputs: list):
    """The steps' replays as one function (see Chain): values in locals, each let go after
    its last read, the computes and fixed values its globals."""
    names = {"monotonic": monotonic, "FAILURES": KERNEL_FAILURES}
    local: dict = {}       # var name -> its local
    body = []
    count = iter(range(1 << 62))

    def new(name):
        local[name] = f"v{next(count)}"
        return local[name]

    def read(name):
        if name not in local:
            body.append(f"{new(name)} = env[{name!r}]")
        return local[name]

    for i, step in enumerate(steps):
        replay = step.replay
        args = []
        for j, (name, value) in enumerate(replay.inputs):
            if name is None:
                names[f"k{i}_{j}"] = value
                args.append(f"k{i}_{j}")
            else:
                args.append(read(name))
        names[f"c{i}"] = replay.compute
        made = ", ".join(new(name) for name in step.names)
        body += [f"at = {i}", "if monotonic() > deadline: late(at)", f"{made} = c{i}({', '.join(args)})"]
        body += [f"del {local.pop(name)}" for name in step.drops if name in local]
    body.append(f"return [{', '.join(read(name) for name in outputs)}]")
    source = "def run(env, deadline, late, failure):\n    at = 0\n    try:\n" + "".join(
        f"        {line}\n" for line in body) + "    except FAILURES as e:\n        raise failure(at, e) from None\n"
    exec(compile(source, "<miltext replays>", "exec"), names)
    return names["run"]


def make(step, args, result) -> Replay | None:
    """The replay the kernel of `step` offered on this run (it gave `result`), or None when
    the step may not be replayed."""
    compute, keys = args.replay
    if step.most > SMALL_OUTPUT or len(step.need) != len(step.names) or step.op.blocks:
        return None
    bindings = step.bindings
    for key, found in bindings.items():
        if key not in keys and any(type(b) is not Literal for b in found):
            return None      # a var the kernel read as a parameter: its value may differ next run
    fixed, reads = [], []
    for index, key in enumerate(keys):
        found = bindings.get(key)
        if found is None or len(found) != 1:
            return None
        value = args(key)
        if type(found[0]) is str:
            if type(value) is not np.ndarray:
                return None
            reads.append((index, found[0], value.shape, value.strides, value.dtype))
            value = None
        fixed.append(value)
    outputs = result if type(result) is tuple else (result,)
    if len(outputs) != len(step.names) or any(type(v) is not np.ndarray or v.dtype != want
                                              for v, want in zip(outputs, step.dtypes)):
        return None
    return Replay(compute, fixed, tuple(reads), step.names)
