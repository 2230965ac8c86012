"""What a kernel sees of its op: inputs by name as numpy (a var's value, a literal, or the op
definition's default), the dtypes its outputs declare, and its nested blocks to evaluate."""
from __future__ import annotations

import sys

import numpy as np

from .. import dtypes, ops as op_table
from ..checker.compat import describe
from ..ir import StateType, TensorType
from ..text import lexemes
from .errors import RunError
from .limits import BIG, held

_REQUIRED = object()
_MISSING = object()


class Literal:
    """A literal input of an op (or a folded const's value: `dtype` its output declares,
    `const` the op, where a value that cannot be read is reported), decoded on its first use
    and kept when it is an array (read-only: a kernel writing into it would change every later
    run); list and dict values, which list kernels may change, are decoded afresh each time."""
    __slots__ = ("value", "array", "dtype", "const", "plain", "readers")

    def __init__(self, value, dtype=None, const=None):
        self.value, self.array, self.dtype, self.const = value, None, dtype, const
        self.plain = {}          # the array as Args.scalar, Args.ints and Args.kept give it, once worked out
        self.readers = 0         # the bindings of the plan that hold it

    def get(self, evaluator):
        if self.array is not None:
            return self.array
        try:
            value = evaluator.value(self.value)
        except RunError as e:
            if self.const is None or e.loc is not None or self.const.loc is None:
                raise
            raise RunError(f"const: {e.message}", self.const.loc) from None
        if isinstance(value, np.ndarray):
            if self.const is not None:
                misfit = const_misfit(self.const, self.value, value)
                if misfit is not None:
                    raise RunError(f"const: {misfit}", self.const.loc)
            if self.dtype is not None and value.dtype != self.dtype:
                with np.errstate(all="ignore"):
                    value = value.astype(self.dtype)
            value = value.view()          # the program's own array stays as it was
            value.flags.writeable = False
            self.array = value
        return value


class Args:
    __slots__ = ("evaluator", "op", "env", "opset", "bindings", "last", "passes", "replay", "relu", "residual", "plan",
                 "held")

    def __init__(self, evaluator, op, env: dict, opset: str, bindings: dict, last=frozenset()):
        """`bindings`: the op's inputs and attributes by name, each a list of var names and
        Literals (the evaluator's Step holds them, prepared once); `last`: the names no later
        op reads."""
        self.evaluator, self.op, self.env, self.opset, self.bindings = evaluator, op, env, opset, bindings
        self.last = last
        self.passes = None
        self.replay = None       # (compute, keys, big) the kernel offered this run (replays.py)
        self.relu = False        # the kernel makes its output's negatives 0 (fusion.py)
        self.residual = None     # a value the kernel adds to its output before that (fusion.py)
        self.plan = None         # (key, what the kernel worked out for it): see planned
        self.held = None         # the bytes the run's values hold, asked once a step: see allow

    def replayable(self, compute, *keys):
        """Offers `compute(*inputs keys)` as what this op computes on later runs whose inputs
        `keys` have the shapes, strides and dtypes they have now, every other input as it is
        now (replays.py says when it is taken); gives `compute`."""
        self.replay = (compute, keys, False)
        return compute

    def replayable_big(self, compute, key: str):
        """Offers `compute(input key[, the residual])` for an op of any size whose kernel
        applied the relu and add folded into it (`relu`, `residual`; the residual is then
        compute's second input), taken only where its whole block replays (replays.Chain)."""
        self.replay = (compute, (key,), True)

    def planned(self, key: tuple, make, reads: tuple):
        """make(), the kernel's choices for inputs and settings `key` sums up, kept with the
        step while its next runs give the same key: worked out once, not at every run (a
        conv's settings, padding and path: ~25 us of Python a conv). Kept only where the
        inputs `reads` names, which make() reads besides, are the op's literals (a var could
        differ next run)."""
        plan = self.plan
        if plan is not None and plan[0] == key:
            return plan[1]
        made = make()
        if all(_fixed(self.bindings.get(name)) for name in reads):
            self.plan = (key, made)
        return made

    def spare(self, key: str, value, shape, dtype):
        """`value`, the kernel's array of input `key`, when the kernel may write its result of
        `shape` and `dtype` into it: this op is the last to read it and nothing else holds it
        (no other name, no view, not the caller's input nor a kept literal); else None. Saves a
        new array per op."""
        found = self.bindings.get(key)
        if (found is None or len(found) != 1 or type(found[0]) is not str or found[0] not in self.last
                or type(value) is not np.ndarray or dict.get(self.env, found[0]) is not value):
            return None
        # the references: the env's, the kernel's, this call's `value` and getrefcount's argument
        if (value.base is None and value.flags.writeable and value.shape == shape and value.dtype == dtype
                and sys.getrefcount(value) == 4):
            return value
        return None

    def _bindings(self, key: str) -> list | None:
        return self.bindings.get(key)

    def _resolve(self, binding):
        if type(binding) is str:
            try:
                return self.env[binding]
            except KeyError:
                raise RunError(f"%{binding} is not defined") from None
        if isinstance(binding, Literal):
            return binding.get(self.evaluator)
        raise RunError("an input binds nothing")

    def has(self, key: str) -> bool:
        return self._bindings(key) is not None

    def __call__(self, key: str, default=_REQUIRED):
        """Input `key` (its one binding); its default when not given: `default`, else the op
        definition's; RunError for a required input left out."""
        found = self.bindings.get(key)
        if found is None:
            if default is not _REQUIRED:
                return default
            spec = op_table.params(self.op.type, self.opset).get(key)
            if spec is not None and spec.get("optional"):
                d = spec.get("default")
                return None if d is None else np.asarray(d)
            raise RunError(f"input {key!r} is required")
        if len(found) != 1:
            return [self._resolve(b) for b in found]
        binding = found[0]
        if type(binding) is str:          # the common case first: a var's value
            value = self.env.get(binding, _MISSING)
            if value is not _MISSING:
                return value
        elif type(binding) is Literal and binding.array is not None:
            return binding.array
        return self._resolve(binding)

    def many(self, key: str) -> list:
        """A variadic input (concat's values) as a list of arrays."""
        found = self._bindings(key)
        if found is None:
            raise RunError(f"input {key!r} is required")
        out = []
        for b in found:
            v = self._resolve(b)
            out.extend(v if isinstance(v, (list, tuple)) else [v])
        return out

    def scalar(self, key: str, default=_REQUIRED):
        return self._plain(key, default, _scalar)

    def ints(self, key: str, default=_REQUIRED) -> list | None:
        return self._plain(key, default, _ints)

    def _plain(self, key: str, default, convert):
        """Input `key` as Python values by `convert`; a literal's kept after its first time."""
        found = self.bindings.get(key)
        if found is not None and len(found) == 1 and type(found[0]) is Literal:
            literal = found[0]
            known = literal.plain.get(convert)
            if known is None:
                value = literal.get(self.evaluator)
                known = literal.plain[convert] = (convert(key, value),) if literal.array is not None else None
                if known is None:
                    return convert(key, value)
            return known[0][:] if type(known[0]) is list else known[0]     # a list the kernel may change
        return convert(key, self(key, default))

    def kept(self, key: str, make):
        """`make(value)` for input `key` when it is a literal array (a weight) no other op reads,
        worked out on the first run and kept for the next in place of the value: a layout the
        kernel computes faster with. `make` may give None (not for this value: the value is
        kept); None too for any other input."""
        found = self.bindings.get(key)
        if found is None or len(found) != 1 or type(found[0]) is not Literal or found[0].readers > 1:
            return None
        literal = found[0]
        known = literal.plain.get(make)
        if known is None:
            value = literal.get(self.evaluator)
            if literal.array is None:
                return None
            if value.nbytes >= BIG:
                self.allow(value.shape, value.itemsize, f"a copy of {key}")
            known = literal.plain[make] = (make(value),)
            if known[0] is not None:
                literal.array = None       # the kept form stands for it: memory holds one of them
        return known[0]

    def out_dtype(self, index: int = 0):
        """The numpy dtype output `index` declares (None when the type does not say)."""
        t = self.op.outputs[index].type if index < len(self.op.outputs) else None
        dtype = getattr(getattr(t, "wrapped", t), "dtype", None)
        if dtype is None:
            return None
        try:
            return dtypes.by_name(dtype).numpy
        except KeyError:
            return None

    def allow(self, shape, dtype=np.float64, what: str = "a tensor") -> None:
        """RunError unless a tensor of `shape` and `dtype` (or itemsize) fits in --max-memory with
        the values the run holds: kernels call it before allocating a size the inputs decide."""
        itemsize = dtype if isinstance(dtype, int) else np.dtype(dtype).itemsize
        self.evaluator.limits.allow(shape, itemsize, what, self._held)

    def _held(self) -> int:
        """held(env), worked out once a step: the values do not change while its kernel runs
        (a conv asks for its output, its windows and its weights' transform)."""
        if self.held is None:
            self.held = held(self.env)
        return self.held

    def allow_each(self, needs) -> None:
        """allow for each (shape, itemsize, what, bytes) of `needs` (limits.need's, worked out
        once) that could fail: a big one (the run's values count too), or one past --max-memory
        alone."""
        limit = self.evaluator.limits.max_memory
        for shape, itemsize, what, size in needs:
            if size >= BIG or size > limit:
                self.allow(shape, itemsize, what)

    def block(self, index: int, bound: list) -> list:
        """Nested block `index` evaluated with its inputs bound to `bound`; its outputs."""
        inner = self.op.blocks[index]
        scope = _NestedValues(self.env)
        for var, value in zip(inner.inputs, bound):
            scope[var.name] = value
        observed = self.evaluator.observer
        if observed is None:
            return self.evaluator.block(inner, scope, self.opset)
        # an observer sees which pass of which block of this op each value comes from
        self.passes = self.passes or {}
        self.passes[index] = self.passes.get(index, -1) + 1
        owner = self.op.outputs[0].name if self.op.outputs else self.op.type
        observed.path.append((owner, index, self.passes[index]))
        try:
            return self.evaluator.block(inner, scope, self.opset)
        finally:
            observed.path.pop()


def const_misfit(op, literal, array) -> str | None:
    """What is wrong when a const's value (`literal`, decoded as `array`) has another rank, or
    another size along a dim its output's type fixes (what `check` says of it); None when it
    fits. Run on, such a value would reach its readers in a shape they were not typed for."""
    declared = op.outputs[0].type if len(op.outputs) == 1 else None
    if isinstance(declared, StateType):
        declared = declared.wrapped
    if not isinstance(declared, TensorType) or declared.proto_rank < 0:
        return None
    if array.ndim == len(declared.shape) and all(type(d) is not int or d == n for d, n in zip(declared.shape, array.shape)):
        return None
    return f"the value is {describe(literal.type)}, but {lexemes.var(op.outputs[0].name)} is declared {describe(declared)}"


def _fixed(found) -> bool:
    """Whether an input's bindings give the same value at every run: none (its default), or
    one literal."""
    return found is None or (len(found) == 1 and type(found[0]) is Literal)


def _scalar(key: str, v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    a = np.asarray(v)
    if a.size != 1:
        raise RunError(f"input {key!r} must be one value, not {a.shape}")
    item = a.reshape(-1)[0]
    return item.item() if hasattr(item, "item") else item


def _ints(key: str, v) -> list | None:
    if v is None:
        return None
    return [int(x) for x in np.asarray(v).reshape(-1)]


class _NestedValues(dict):
    """The values a nested block defines, by name, falling back to the enclosing block's."""

    def __init__(self, outer: dict):
        super().__init__()
        self.outer = outer

    def __missing__(self, key):
        return self.outer[key]

    def __contains__(self, key):
        return dict.__contains__(self, key) or key in self.outer
