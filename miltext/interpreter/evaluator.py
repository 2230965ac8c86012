"""The loop, prepared once per program and run many times: each block becomes a list of steps
(the op, its kernel, its bindings, the dtypes and sizes its outputs declare, the values no later
op reads), worked out on the block's first run; literals and weights are decoded on first use
and kept, read-only, for every later run (weight files memory-mapped where the dtype allows).
A run evaluates the steps in order, keeping each var's value by name; nested blocks (cond,
while_loop) run in a scope of their own that sees the outer one."""
from __future__ import annotations

import warnings
from functools import cache
from time import monotonic

import numpy as np

from .. import dtypes
from ..errors import InputError
from ..ir import Blob, DictData, ListData, StateType, TensorData, TensorType, TupleData, Value, WeightRef
from ..ir.walk import blocks, operations
from . import blas_threads, fast_kernels, fusion, parallel, replays
from .args import Args, Literal
from .errors import KERNEL_FAILURES, RunError
from .limits import BIG, Limits, need, size_text
from .registry import find


class Step:
    """One op as the loop runs it."""
    __slots__ = ("op", "kernel", "bindings", "names", "dtypes", "need", "most", "drops", "last", "args", "replay",
                 "relu", "residual", "folded")

    def __init__(self, op, kernel, bindings: dict, drops: list):
        self.op, self.kernel, self.bindings, self.drops = op, kernel, bindings, drops
        self.last = frozenset(drops)         # the inputs no op after this one reads
        self.args = None                     # what the kernel sees, made on the first run and reused
        self.replay = None                   # the op without its kernel, for inputs as last run's (replays.py)
        self.relu = False                    # the kernel applies the next step's relu (fusion.py)
        self.residual = None                 # the kernel applies the next step's add of this name (fusion.py)
        self.folded = None                   # a relu or add the step before applies: the name it reads
        self.names = [var.name for var in op.outputs]
        self.dtypes = [_numpy_dtype(var.type) for var in op.outputs]
        # what the text declares the outputs take, checked before the kernel runs
        self.need = []
        for var in op.outputs:
            t = var.type.wrapped if isinstance(var.type, StateType) else var.type
            if isinstance(t, TensorType) and t.is_static:
                self.need.append(need(t.shape, np.dtype(_numpy_dtype(t) or np.float64).itemsize, f"output %{var.name}"))
        self.most = max((size for *_, size in self.need), default=0)     # the largest, checked first


class Evaluator:
    def __init__(self, program, weights: str | None = None, limits: Limits | None = None,
                 confine_refs: bool = False, mapped: bool = True):
        """`mapped`: weights are views of their memory-mapped files (kept for many runs), else
        read into arrays of their own (one weight at a time, let go after use)."""
        self.program = program
        self.mapped = mapped
        self.weights_folder = weights
        self.confine_refs = confine_refs     # weight references may not lead out of `weights`
        self.limits = limits if limits is not None else Limits()
        self.states: dict = {}
        self.observer = None
        self._weights = None
        self._maps: dict = {}                # weight file -> its memory map (kept: arrays view it)
        self._plans: dict = {}               # id(block) -> (block, its steps)
        self._chains: dict = {}              # id(block) -> its replays.Chain
        self.native = None                   # the C kernels, when built and allowed (set per run)
        _complete_types(program)

    # ---- a function ----
    def run(self, function: str, inputs: dict, states: dict | None = None, limits: Limits | None = None,
            observer=None) -> dict:
        """The outputs of `function` for `inputs`; `limits` (this run's; else the evaluator's)
        and `observer` (called after each op, see Session.run) hold for this run only."""
        fn = self.program.functions.get(function)
        if fn is None:
            raise RunError(f"the program has no function {function!r} "
                           f"(it has {', '.join(sorted(self.program.functions)) or 'none'})")
        if limits is not None:
            self.limits = limits
        self.observer = None if observer is None else _Observed(observer, function)
        self.native = fast_kernels.loaded()
        self.states = states if states is not None else {}
        extra = set(inputs) - {v.name for v in fn.inputs}
        if extra:
            raise RunError(f"{function} has no input named {', '.join(sorted(extra))} "
                           f"(it takes {', '.join('%' + v.name for v in fn.inputs) or 'none'})", fn.loc)
        env = {}
        for var in fn.inputs:
            if isinstance(var.type, StateType):
                if var.name not in self.states:
                    raise RunError(f"state %{var.name} is not given: give its starting value "
                                   f"(`-i {var.name}=FILE.npy` to miltext run, states={{'{var.name}': array}} "
                                   "to miltext.run)", var.loc)
                env[var.name] = _StateRef(var.name)
                continue
            if var.name not in inputs:
                raise RunError(f"input %{var.name} is not given", var.loc)
            env[var.name] = _as_input(var, inputs[var.name])
        parallel.keep_freed_memory()
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings(), blas_threads.for_run(self.limits.threads):
                warnings.simplefilter("ignore", RuntimeWarning)    # NaN and inf are answers here
                outputs = self.block(fn.block, env, fn.opset)
        finally:
            self.close_files()
        # a kept literal is read-only: the caller gets an array of its own
        return {name: v if not isinstance(v, np.ndarray) or v.flags.writeable else v.copy()
                for name, v in zip(fn.block.outputs, outputs)}

    def close_files(self) -> None:
        """Close the weight files read by seek and read (the maps stay: kept arrays view them)."""
        if self._weights is not None:
            self._weights.__exit__(None, None, None)
            self._weights = None

    def block(self, block, env: dict, opset: str) -> list:
        steps = self._plans.get(id(block))
        steps = self._prepare(block) if steps is None else steps[1]
        chain, limits = self._chains[id(block)], self.limits
        if limits.max_memory < replays.SMALL_OUTPUT:     # else no small replayed op needs a memory check
            chain.settle(None, steps, block.outputs, limits.max_memory, self._setting)
            self._steps(steps, env, opset, False)
        elif self.observer is None and chain.holds(env, limits.max_memory, self._setting):
            return chain.run(env, limits.deadline, lambda at: limits.check_time(steps[at].op),
                             lambda at, e: self._failure(steps[at].op, e))
        else:
            start = chain.start(env, steps)
            chain.settle(start if self._steps(steps, env, opset, True) else None, steps, block.outputs,
                         limits.max_memory, self._setting)
        missing = [n for n in block.outputs if n not in env]
        if missing:
            raise RunError(f"the block's output %{missing[0]} is not defined", block.loc)
        return [env[n] for n in block.outputs]

    def _setting(self) -> tuple:
        """What a chain's big replays bound besides sizes: the C kernels and the threads."""
        return self.native, parallel.sharing()

    def _steps(self, steps: list, env: dict, opset: str, replaying: bool) -> bool:
        """Each step by its replay where it has one that takes its inputs, else by its kernel
        (always, for a big op's: it checks the memory); whether every step replayed, or (a big
        op) made its replay afresh, or was folded into the step before."""
        limits, observer, replayed = self.limits, self.observer, True
        for step in steps:
            if monotonic() > limits.deadline:
                limits.check_time(step.op)
            replay = step.replay
            if step.folded is not None and observer is None:
                env[step.names[0]] = env[step.folded]       # the step before applied this relu or add
            elif replay is None or not replaying or replay.big or not self._replayed(step.op, replay, env):
                self._step(step, env, opset)
                replayed = replayed and step.replay is not None and step.replay.big
            if observer is not None:
                observer.saw(step, env)
            for name in step.drops:
                # a value no later op reads is let go, so memory holds the live values only
                if dict.__contains__(env, name):
                    del env[name]
        return replayed

    def _prepare(self, block) -> list:
        """The block's steps, each with the names no later op (nor the block's outputs) reads;
        worked out once per block (a loop body runs many times)."""
        last = {}
        for index, op in enumerate(block.operations):
            for name in _reads(op):
                last[name] = index
            for var in op.outputs:
                last.setdefault(var.name, index)      # never read: dropped at once
        keep = set(block.outputs)
        drops = [[] for _ in block.operations]
        for name, index in last.items():
            if name not in keep:
                drops[index].append(name)
        folded = _foldable(block, keep)
        steps = []
        for i, op in enumerate(block.operations):
            if id(op) not in folded:
                steps.append(self._make_step(op, [n for n in drops[i] if n not in folded.names], folded))
        fusion.mark(steps)
        self._plans[id(block)] = (block, steps)     # the block is held so its id stays its own
        made = {var.name for op in block.operations for var in op.outputs}
        self._chains[id(block)] = replays.Chain(sorted({b for step in steps for found in step.bindings.values()
                                                        for b in found if type(b) is str and b not in made}))
        return steps

    @staticmethod
    def _make_step(op, drops: list, folded=None) -> Step:
        """`folded`: the block's consts read by its own ops only, bound to their readers as
        Literals (a const is then no step of its own: most of a converted model's ops are)."""
        names = folded.names if folded else {}
        bindings = {key: [names.get(b, b) if isinstance(b, str) else Literal(b) if isinstance(b, Value) else b
                          for b in found] for key, found in op.inputs.items()}
        for key, value in op.attributes.items():
            if key != "name" and key not in bindings:
                bindings[key] = [Literal(value)]
        for found in bindings.values():
            for b in found:
                if type(b) is Literal:
                    b.readers += 1
        return Step(op, find(op.type), bindings, drops)

    def op(self, op, env: dict, opset: str) -> None:
        """`op` run alone on the values of `env`; nothing of it is kept (Constants decodes one
        weight at a time)."""
        self.native = fast_kernels.loaded()
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            self._step(self._make_step(op, []), env, opset)

    def _step(self, step: Step, env: dict, opset: str) -> None:
        op, kernel = step.op, step.kernel
        if kernel is None:
            raise RunError(f"miltext run has no kernel for {op.type} (docs/run.md lists the ops it runs)", op.loc)
        args = step.args
        if args is None:
            args = step.args = Args(self, op, env, opset, step.bindings, step.last)
        else:                          # the step's own, made on its first run
            args.evaluator, args.env, args.opset, args.passes, args.held = self, env, opset, None, None
        args.relu = step.relu and self.observer is None
        args.residual = env[step.residual] if step.residual is not None and self.observer is None else None
        try:
            most = step.most
            if most >= BIG or most > self.limits.max_memory:
                args.allow_each(step.need)
            result = kernel(args)
            step.replay = None if args.replay is None else replays.make(step, args, result)
            args.replay = None
        except KERNEL_FAILURES as e:
            raise self._failure(op, e) from None
        finally:
            # the run's values are not held past it, nor the evaluator (no cycle through its plans)
            args.evaluator = args.env = args.residual = None
        names = step.names
        if type(result) is not tuple:
            if len(names) != 1:
                raise RunError(f"{op.type} gave 1 output, the op names {len(names)}", op.loc)
            want = step.dtypes[0]
            # the common case inline: an array of the declared dtype
            env[names[0]] = (result if type(result) is np.ndarray and (want is None or result.dtype == want)
                             else _as_declared(want, result))
            return
        if len(result) != len(names):
            raise RunError(f"{op.type} gave {len(result)} output(s), the op names {len(names)}", op.loc)
        for name, want, value in zip(names, step.dtypes, result):
            env[name] = _as_declared(want, value)

    def _replayed(self, op, replay, env: dict) -> bool:
        try:
            return replay.run(env)
        except KERNEL_FAILURES as e:
            raise self._failure(op, e) from None

    def _failure(self, op, e: Exception) -> Exception:
        """What a run says of error `e` in the kernel of `op`."""
        if isinstance(e, RunError):
            return RunError(f"{op.type}: {e.message}", op.loc) if e.loc is None and op.loc is not None else e
        if isinstance(e, InputError):
            return e                   # a weight file it could not read: located already
        if isinstance(e, MemoryError):     # a size no kernel checked: a bug of ours, still said plainly
            return RunError(f"{op.type} ran out of memory (--max-memory is "
                            f"{size_text(self.limits.max_memory)})", op.loc)
        return RunError(f"{op.type} cannot run on these inputs: {e}", op.loc)

    # ---- values ----
    def value(self, value):
        """A literal or const value as numpy (a list for a list value, a tuple for a tuple)."""
        data, t = value.data, value.type
        if isinstance(data, Blob):
            return self._blob(data, t)
        if isinstance(data, WeightRef):
            return self._file_tensor(data, t)
        if isinstance(data, TensorData):
            return value.array
        if isinstance(data, ListData):
            return [self.value(v) for v in data.values]
        if isinstance(data, TupleData):
            return tuple(self.value(v) for v in data.values)
        if isinstance(data, DictData):
            return {self.value(k).item(): self.value(v) for k, v in data.items}
        raise RunError(f"a value of this kind cannot be run ({type(data).__name__})")

    def _blob(self, blob: Blob, vtype):
        from ..model.blobs import Weights
        if self._weights is None:
            self._weights = Weights(self.weights_folder, "the program")
        reader = self._weights.reader(blob.file)
        info = reader.info(blob.offset)               # the record checked against the file
        dt = dtypes.by_name(info.dtype)
        if not self.mapped or not _mappable(dt):
            return self._weights.blob_array(blob, vtype)
        from .weight_maps import mapped
        flat = mapped(self._maps, reader.path, np.dtype(dt.numpy), info.data_offset, info.count)
        t = vtype.wrapped if isinstance(vtype, StateType) else vtype
        return flat.reshape(t.shape) if isinstance(t, TensorType) and t.is_static else flat

    def _file_tensor(self, ref, vtype):
        """A tensor a .mil file names in a .npy or .safetensors file beside it, in the declared
        dtype (a `from=` cast is the text's own)."""
        from ..model import weight_refs
        header = weight_refs.check(ref, vtype, self.weights_folder, self.confine_refs)
        self.limits.allow(header.shape, 8, f"the tensor {ref.path} names")    # read, then cast: 8 bytes at most
        return weight_refs.tensor(ref, vtype, self.weights_folder, header, self.confine_refs)


class _Folded(set):
    """The ids of a block's folded const ops, and `names`: each one's output -> its Literal."""

    def __init__(self):
        super().__init__()
        self.names: dict = {}


def _foldable(block, keep: set) -> _Folded:
    """The consts of `block` whose value only the block's own ops read (no nested block, not
    the block's outputs): their readers take the value straight from a Literal."""
    nested = set()
    for op in block.operations:
        if op.blocks:
            nested.update(_reads(op))
    folded = _Folded()
    for op in block.operations:
        val = None if op.type != "const" else op.inputs.get("val", [op.attributes.get("val")])
        if (val is not None and len(val) == 1 and isinstance(val[0], Value) and len(op.outputs) == 1
                and op.outputs[0].name not in keep and op.outputs[0].name not in nested):
            folded.add(id(op))
            folded.names[op.outputs[0].name] = Literal(val[0], _numpy_dtype(op.outputs[0].type), op)
    return folded


class _Observed:
    """An observer and where the run is: the function, and inside nested blocks the op that
    owns each one with its block index and pass, outermost first."""
    __slots__ = ("observer", "function", "path")

    def __init__(self, observer, function: str):
        self.observer, self.function, self.path = observer, function, []

    def saw(self, step: Step, env: dict) -> None:
        self.observer(self.function, tuple(self.path), step.op,
                      {name: env[name] for name in step.names if name in env})


class _StateRef:
    """A state input: read_state and write_state reach the array through the evaluator."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


def _mappable(dt) -> bool:
    """Whether the weight file's bytes are the array itself (little-endian, whole bytes, a
    numpy dtype of the same width): then it is mapped, not read."""
    if dt.sub_byte or dt.numpy is None or np.dtype(dt.numpy).itemsize * 8 != dt.bits:
        return False
    return dt.kind != "float" or dt.name in ("fp16", "fp32", "fp64")


def _numpy_dtype(t):
    if isinstance(t, StateType):
        t = t.wrapped
    if not isinstance(t, TensorType):
        return None
    return _numpy_of(t.dtype)


@cache
def _numpy_of(name):
    """The NumPy dtype of MIL dtype `name` (None: none), worked out once (a run asks for each input)."""
    try:
        return np.dtype(dtypes.by_name(name).numpy)
    except (KeyError, TypeError):
        return None


def _as_input(var, value):
    try:
        array = np.asarray(value)
        want = _numpy_dtype(var.type)
        if want is not None and array.dtype != want:
            with np.errstate(all="ignore"):
                array = array.astype(want)
    except (ValueError, TypeError, OverflowError) as e:
        raise RunError(f"input %{var.name} is not a tensor of numbers ({e})", var.loc) from None
    t = var.type
    if isinstance(t, TensorType) and t.rank is None and len(t.shape) != array.ndim:
        raise RunError(f"input %{var.name} has rank {array.ndim}, the function takes rank {len(t.shape)}", var.loc)
    if isinstance(t, TensorType) and t.rank is None:
        for i, (want_d, got) in enumerate(zip(t.shape, array.shape)):
            if type(want_d) is int and want_d != got:
                raise RunError(f"input %{var.name} is {array.shape}, but dim {i} must be {want_d}", var.loc)
    return array


_PASSED = (list, tuple, dict, _StateRef)


def _as_declared(want, value):
    """An op's result in the dtype `want` its output declares (fp16 stays fp16)."""
    if type(value) is np.ndarray:
        if want is None or value.dtype == want:
            return value
    elif isinstance(value, _PASSED):
        return value
    array = np.asarray(value)
    if want is not None and array.dtype != want:
        with np.errstate(all="ignore"):      # fp16 overflow is inf, as Core ML gives
            array = array.astype(want)
    return array


def _complete_types(program) -> None:
    """Shorthand leaves output types out: infer them, so results take the declared dtypes."""
    if all(var.type is not None for op in operations(program) for var in op.outputs):
        return
    from ..infer import infer
    from ..infer.errors import InferenceError
    try:
        infer(program)
    except InferenceError as e:
        raise RunError(f"cannot run a program whose types cannot be inferred: {e.message}", e.loc) from None


def _reads(op):
    """The names an op reads: its inputs, and what its nested blocks read from outside."""
    for each in (op, *operations(op)):
        for bindings in each.inputs.values():
            yield from (b for b in bindings if isinstance(b, str))
    for inner in blocks(op):
        yield from inner.outputs
