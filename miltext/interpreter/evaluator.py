"""The loop: a function's block evaluated op by op, each var's value kept by name; nested
blocks (cond, while_loop) evaluated in a scope of their own that sees the outer one."""
from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes
from ..errors import InputError
from ..ir import Blob, DictData, ListData, StateType, TensorData, TensorType, TupleData, WeightRef
from ..ir.walk import blocks, operations
from .args import Args
from .errors import RunError
from .limits import Limits, size_text
from .registry import find


class Evaluator:
    def __init__(self, program, weights: str | None = None, limits: Limits | None = None,
                 confine_refs: bool = False):
        self.program = program
        self.weights_folder = weights
        self.confine_refs = confine_refs     # weight references may not lead out of `weights`
        self.limits = limits if limits is not None else Limits()
        self._weights = None
        self._last_uses = {}
        _complete_types(program)

    # ---- a function ----
    def run(self, function: str, inputs: dict, states: dict | None = None) -> dict:
        fn = self.program.functions.get(function)
        if fn is None:
            raise RunError(f"the program has no function {function!r} "
                           f"(it has {', '.join(sorted(self.program.functions)) or 'none'})")
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
        try:
            outputs = self.block(fn.block, env, fn.opset)
        finally:
            if self._weights is not None:
                self._weights.__exit__(None, None, None)
                self._weights = None
        return dict(zip(fn.block.outputs, outputs))

    def block(self, block, env: dict, opset: str) -> list:
        drops = self._drops(block)
        for index, op in enumerate(block.operations):
            self.op(op, env, opset)
            for name in drops[index]:
                # a value no later op reads is let go, so memory holds the live values only
                if dict.__contains__(env, name):
                    del env[name]
        missing = [n for n in block.outputs if n not in env]
        if missing:
            raise RunError(f"the block's output %{missing[0]} is not defined", block.loc)
        return [env[n] for n in block.outputs]

    def _drops(self, block) -> list:
        """For each op of the block, the names no later op (nor the block's outputs) reads;
        worked out once per block (a loop body runs many times)."""
        key = id(block)
        if key not in self._last_uses:
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
            self._last_uses[key] = (block, drops)     # the block is held so its id stays its own
        return self._last_uses[key][1]

    def op(self, op, env: dict, opset: str) -> None:
        kernel = find(op.type)
        if kernel is None:
            raise RunError(f"miltext run has no kernel for {op.type} (docs/run.md lists the ops it runs)", op.loc)
        self.limits.check_time(op)
        args = Args(self, op, env, opset)
        try:
            for var in op.outputs:       # what the text declares, checked before the kernel runs
                t = var.type.wrapped if isinstance(var.type, StateType) else var.type
                if isinstance(t, TensorType) and t.is_static:
                    itemsize = np.dtype(_numpy_dtype(t) or np.float64).itemsize
                    args.allow(t.shape, itemsize, f"output %{var.name}")
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)    # NaN and inf are answers here
                result = kernel(args)
        except RunError as e:
            if e.loc is None and op.loc is not None:
                raise RunError(f"{op.type}: {e.message}", op.loc) from None
            raise
        except InputError:
            raise                      # a weight file it could not read: located already
        except (ValueError, IndexError, TypeError, KeyError, ArithmeticError) as e:
            raise RunError(f"{op.type} cannot run on these inputs: {e}", op.loc) from None
        except MemoryError:            # a size no kernel checked: a bug of ours, still said plainly
            raise RunError(f"{op.type} ran out of memory (--max-memory is "
                           f"{size_text(self.limits.max_memory)})", op.loc) from None
        results = list(result) if isinstance(result, tuple) else [result]
        if len(results) != len(op.outputs):
            raise RunError(f"{op.type} gave {len(results)} output(s), the op names {len(op.outputs)}", op.loc)
        for var, value in zip(op.outputs, results):
            env[var.name] = _as_declared(var.type, value)

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
        return self._weights.blob_array(blob, vtype)


    def _file_tensor(self, ref, vtype):
        """A tensor a .mil file names in a .npy or .safetensors file beside it, in the declared
        dtype (a `from=` cast is the text's own)."""
        from ..model import weight_refs
        header = weight_refs.check(ref, vtype, self.weights_folder, self.confine_refs)
        self.limits.allow(header.shape, 8, f"the tensor {ref.path} names")    # read, then cast: 8 bytes at most
        return weight_refs.tensor(ref, vtype, self.weights_folder, header, self.confine_refs)


class _StateRef:
    """A state input: read_state and write_state reach the array through the evaluator."""
    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


def _numpy_dtype(t):
    if isinstance(t, StateType):
        t = t.wrapped
    if not isinstance(t, TensorType):
        return None
    try:
        return dtypes.by_name(t.dtype).numpy
    except KeyError:
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


def _as_declared(vtype, value):
    """An op's result in the dtype its output declares (fp16 stays fp16)."""
    if isinstance(value, (list, tuple, dict, _StateRef)):
        return value
    want = _numpy_dtype(vtype)
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

