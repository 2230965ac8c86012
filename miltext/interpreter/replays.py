"""Replays: a small op computed straight from its inputs on the runs after its first.

A decoder of small ops spends more on each kernel's bookkeeping (reading its inputs and
literals, checking sizes, choosing a path) than on its arithmetic. A kernel that can say what
it computes as a function of some of its inputs, all else fixed by the op's literals (weights,
axes, modes), offers that function (`Args.replayable`). The evaluator keeps it with the step
when the op is small (every output declared, static, at most SMALL_OUTPUT bytes), every other
input is a literal and the results take their declared dtypes. A later run whose inputs have
the same shapes, strides and dtypes calls it and skips the kernel; any other input runs the
kernel, which offers a new one.

A block whose every step replayed on its last run is a Chain: when the values it reads from
outside have the layout they had then, each step's inputs have theirs too (a replay's output
layout follows from its inputs'), and every step replays with no check at all, from a flat
list of its values (the loop's own bookkeeping costs a small op more than its arithmetic).

A big op (a conv or a pool in the C kernels, sharing its work between threads) offers a big
replay (`Args.replayable_big`): the C call with every setting bound, and the relu and add that
fusion folded into the step applied in it (the folded steps are then the op's value, under
their own names). A big replay is never run alone: its kernel checks the memory it takes
against --max-memory, and makes it afresh at each run. It runs only in a Chain, settled by a
run that ran every big op's kernel (and so passed every memory check). A later run with the
same layout, the same C kernels and threads, at least that run's --max-memory and at most the
bytes it held as the block began makes the same allocations on the same base, so it passes
them too: the Chain runs it flat (a ResNet-18's convs cost ~70 us of Python each through
their kernels, cold caches after each big C call).

Still, a step replays only where its kernel said how: a kernel's other paths (NumPy's, fp16,
a residual that broadcasts) run as kernels at every run."""
from __future__ import annotations

from operator import itemgetter
from time import monotonic

import numpy as np

from .args import Literal
from .errors import KERNEL_FAILURES
from .limits import held

SMALL_OUTPUT = 1 << 16     # bytes: the largest output of an op that may be replayed


class Replay:
    """`compute` and the inputs it takes: fixed values, and the names read from a run's
    values with the shape, strides and dtype they must have (`inputs`: each input as a name
    to read or None and its fixed value)."""
    __slots__ = ("compute", "fixed", "reads", "names", "inputs", "big")

    def __init__(self, compute, fixed: list, reads: tuple, names: list, big: bool = False):
        self.compute, self.fixed, self.reads, self.names, self.big = compute, fixed, reads, names, big
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
    since the last one that ran a kernel), with `run`, the block laid out flat for it:
    run(env, deadline, late, failure) gives the block's outputs, calling late(i) once the
    monotonic clock passes `deadline` before step i, and raising failure(i, e) for an error
    e of step i. With big replays (`big`), also that run's `limit` (--max-memory),
    `setting` (its C kernels and threads) and `held` (the bytes its values held as the block
    began)."""
    __slots__ = ("outside", "layout", "run", "big", "limit", "setting", "held")

    def __init__(self, outside: list):
        self.outside, self.layout, self.run = outside, None, None
        self.big, self.limit, self.setting, self.held = False, 0, None, 0

    def start(self, env, steps: list):
        """What settle keeps of a run about to go through every step: the outside values'
        layout and the bytes the run holds (worked out only where a step has a big replay);
        None where a step has no replay (nor is folded into the step before)."""
        if not all(step.replay is not None or step.folded is not None for step in steps):
            return None
        layout = self.now(env)
        if layout is None:
            return None
        return layout, (held(env) if _has_big(steps) else 0)

    def settle(self, start, steps: list, outputs: list, limit: int, setting) -> None:
        """start's layout and bytes, kept when the run went through every step by its replay
        or (a big op) by a kernel that made its replay afresh (None: it did not), with the run's
        limit and setting() (asked only with big replays), and the block laid out flat for it."""
        layout, base = start if start is not None else (None, 0)
        big = layout is not None and _has_big(steps)
        # a big replay is made afresh at each run of its kernel: the flat block takes the new ones
        if layout is None or layout != self.layout or self.run is None or big:
            self.run = None if layout is None else _Flat(steps, outputs)
        self.layout, self.big = layout, big
        self.limit, self.setting, self.held = (limit, setting(), base) if big else (0, None, 0)

    def now(self, env) -> list | None:
        """The outside values' layout in `env` (None when one is no array, or not there: the
        steps' own reads say so, at their place)."""
        layout = []
        for name in self.outside:
            try:
                v = env[name]
            except KeyError:
                return None
            if type(v) is not np.ndarray:
                return None
            layout.append((v.shape, v.strides, v.dtype))
        return layout

    def holds(self, env, limit: int, setting) -> bool:
        """Whether every step may replay unchecked on the values of `env` under --max-memory
        `limit` (with big replays: at least the settling run's, the same setting(), at most the
        bytes it held)."""
        if self.layout is None or self.now(env) != self.layout:
            return False
        return not self.big or (limit >= self.limit and setting() == self.setting and held(env) <= self.held)


class _Flat:
    """A chain's steps laid out flat (see Chain.run): every value in a slot of one list (the
    fixed values placed once), each step its compute, what reads its inputs from the slots,
    the slots it fills and those whose last reader it is (let go at once)."""
    __slots__ = ("slots", "outside", "program", "outputs")

    def __init__(self, steps: list, outputs: list):
        slot: dict = {}          # var name -> its slot
        self.slots: list = []    # the slots' values before a run: the fixed ones
        self.outside: list = []  # (name, slot): the values read from the run's env
        holders: dict = {}       # slot -> the names that hold it (a folded step's and the one before's)

        def place(value=None) -> int:
            self.slots.append(value)
            holders[len(self.slots) - 1] = 1
            return len(self.slots) - 1

        def read(name) -> int:
            if name not in slot:
                slot[name] = place()
                self.outside.append((name, slot[name]))
            return slot[name]

        def free(name) -> tuple:
            at = slot.pop(name)
            holders[at] -= 1
            return () if holders[at] else (at,)

        self.program = []
        for at, step in enumerate(steps):
            if step.folded is not None:       # the step before applied this relu or add: its value
                slot[step.names[0]] = slot[step.folded]
                holders[slot[step.folded]] += 1
            else:
                ins = [place(value) if name is None else read(name) for name, value in step.replay.inputs]
                made = [place() for _ in step.names]
                slot.update(zip(step.names, made))
            frees = tuple(index for name in step.drops if name in slot for index in free(name))
            if step.folded is None:
                self.program.append((at, step.replay.compute, itemgetter(*ins) if ins else _no_inputs,
                                     len(ins) != 1, made[0] if len(made) == 1 else tuple(made), frees))
            elif frees:
                self.program.append((at, _nothing, _no_inputs, True, (), frees))
        self.outputs = [read(name) for name in outputs]

    def __call__(self, env, deadline: float, late, failure) -> list:
        values = self.slots.copy()
        for name, at in self.outside:
            values[at] = env[name]
        at = 0
        try:
            for at, compute, get, many, made, frees in self.program:
                if monotonic() > deadline:
                    late(at)
                result = compute(*get(values)) if many else compute(get(values))
                if type(made) is int:
                    values[made] = result
                else:
                    for index, value in zip(made, result):
                        values[index] = value
                for index in frees:
                    values[index] = None
        except KERNEL_FAILURES as e:
            raise failure(at, e) from None
        return [values[index] for index in self.outputs]


def _has_big(steps: list) -> bool:
    """Whether a step of `steps` holds a big replay."""
    return any(step.replay is not None and step.replay.big for step in steps)


def _no_inputs(values) -> tuple:
    return ()


def _nothing() -> tuple:
    return ()


def make(step, args, result) -> Replay | None:
    """The replay the kernel of `step` offered on this run (it gave `result`), or None when
    the step may not be replayed."""
    compute, keys, big = args.replay
    if len(step.need) != len(step.names) or step.op.blocks:
        return None
    if big:
        # the kernel applied what fusion folded into the step; a flat run skips the folded steps
        if args.relu != step.relu or (args.residual is None) != (step.residual is None):
            return None
    elif step.most > SMALL_OUTPUT or step.relu or step.residual is not None:
        return None      # a small replay computes its op alone
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
    if big and step.residual is not None:           # the add's other input, compute's last
        value = args.residual
        if type(value) is not np.ndarray:
            return None
        reads.append((len(fixed), step.residual, value.shape, value.strides, value.dtype))
        fixed.append(None)
    outputs = result if type(result) is tuple else (result,)
    if len(outputs) != len(step.names) or any(type(v) is not np.ndarray or v.dtype != want
                                              for v, want in zip(outputs, step.dtypes)):
        return None
    return Replay(compute, fixed, tuple(reads), step.names, big)
