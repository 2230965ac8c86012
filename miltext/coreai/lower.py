"""A MIL program lowered to the text of a `coreai` module: one `coreai.graph` per function.

What is known before the program runs is folded on miltext's own interpreter kernels (consts,
and shape arithmetic on static shapes: `shape`, `gather`, `concat` of known values...), so only
ops on run-time values are lowered; a constant is written where a lowered op first uses it.
Compressed weights (constexpr_*) are never folded: their lowerings keep them compressed."""
from __future__ import annotations

import re

import numpy as np

from ..ir import StateType, TensorType, Value
from . import mlir
from .errors import PortError
from .mlir import CValue
from .table import lowering

# Never folded: weights kept compressed, state, randomness, and ops that own blocks.
_UNFOLDED_PREFIXES = ("constexpr_", "random_")
_UNFOLDED = {"read_state", "write_state", "coreml_update_state", "cond", "while_loop",
             "make_list", "list_read", "list_write", "list_gather", "list_scatter", "list_length"}


class Module:
    """The text being written: graphs, and the resource blobs they share."""

    def __init__(self):
        self.graphs: list[str] = []
        self.blobs: dict[str, bytes] = {}

    def text(self) -> str:
        return "module {\n" + "".join(self.graphs) + "}\n" + mlir.resource_section(self.blobs)


class Lowering:
    """One function being lowered: what each MIL name is (a Core AI value, or known), and the
    op lines written so far."""

    def __init__(self, module: Module, evaluator, function_name: str, opset: str):
        self.module, self.evaluator = module, evaluator
        self.function, self.opset = function_name, opset
        self.lines: list[str] = []
        self.values: dict[str, CValue] = {}     # MIL name -> Core AI value
        self.known: dict = {}                   # MIL name -> numpy value, known before running
        self.types: dict = {}                   # MIL name -> its MIL type
        self._names: set = set()
        self._consts: dict = {}                 # MIL name -> the constant written for it
        self.handles: dict = {}                 # MIL state name -> its Handle (lowerings/states)
        self.depth = 0                          # regions (of if/while) being written
        self.indent = "    "

    # ---- names and lines ----
    def fresh(self, hint: str = "v") -> str:
        base = "%" + (re.sub(r"[^A-Za-z0-9_]", "_", hint) or "v")
        if base[1].isdigit():
            base = "%v" + base[1:]
        name, n = base, 1
        while name in self._names:
            n += 1
            name = f"{base}_{n}"
        self._names.add(name)
        return name

    def emit(self, name: str, operands: list, result, properties: str = "", hint: str = "v"):
        """Write `coreai.<name>` on `operands` (CValues); `result` is (dtype, shape) or a list
        of them. Returns the CValue (or the list of CValues) it gives."""
        many = isinstance(result, list)
        results = result if many else [result]
        outs = [CValue(self.fresh(hint), d, s) for d, s in results]
        head = ", ".join(o.ssa for o in outs) if outs else None
        self.lines.append(self.indent + mlir.op_line(
            head, name if "." in name else f"coreai.{name}", [o.ssa for o in operands],
            [o.type for o in operands], [o.type for o in outs], properties))
        return outs if many else outs[0]

    def constant(self, array, dtype: str, hint: str = "c") -> CValue:
        array = np.asarray(array)
        ty = mlir.tensor(dtype, array.shape)
        flat = array.reshape(-1)
        splat = flat.size > 0 and bool((flat == flat[0]).all()) and not np.isnan(flat[0]).any()
        small = array.size <= mlir.INLINE_LIMIT or splat
        if small and dtype in mlir.ELEMENT and dtype not in ("int4", "uint4", "uint2"):
            attr = mlir.inline_dense(np.asarray(array, mlir.numpy_dtype(dtype)), dtype)
        else:
            key = f"w{len(self.module.blobs)}_" + re.sub(r"[^A-Za-z0-9_]", "_", hint)[:40]
            self.module.blobs[key] = mlir.blob(array, dtype)
            attr = f"dense_resource<{key}>"
        out = CValue(self.fresh(hint), dtype, array.shape)
        self.lines.append(f"{self.indent}{out.ssa} = \"coreai.constant\"() <{{value = {attr} : {ty}}}> : () -> {ty}")
        return out

    def ints(self, values, hint: str = "c") -> CValue:
        """A si32 constant (axes, shapes, indices the dialect takes as operands)."""
        return self.constant(np.asarray(values, np.int32), "int32", hint)

    def uints(self, values, hint: str = "c") -> CValue:
        """A ui32 constant (sizes and strides the dialect takes unsigned)."""
        return self.constant(np.asarray(values, np.uint32), "uint32", hint)

    # ---- the op's inputs ----
    @staticmethod
    def has(op, key: str) -> bool:
        """Whether the op has input `key` (or, as iOS16's constexpr ops, attribute `key`)."""
        return bool(op.inputs.get(key)) or (key != "name" and key in op.attributes)

    def binding(self, op, key: str):
        found = op.inputs.get(key)
        if found:
            return found[0]
        if key != "name" and key in op.attributes:
            return op.attributes[key]
        raise PortError(f"{op.type} has no input {key}", op)

    def is_known(self, op, key: str) -> bool:
        return all(self._is_known(b) for b in op.inputs.get(key, [])) or key in op.attributes

    def _is_known(self, b) -> bool:
        return isinstance(b, Value) or b in self.known

    def known_value(self, op, key: str, default=PortError):
        """The value of input `key`, which must be known before the program runs."""
        if not self.has(op, key):
            if default is PortError:
                raise PortError(f"{op.type} has no input {key}", op)
            return default
        b = self.binding(op, key)
        if isinstance(b, Value):
            return self.evaluator.value(b)
        if b in self.known:
            return self.known[b]
        raise PortError(f"{op.type}: its input {key} (%{b}) is computed at run time, and Core AI "
                        f"takes it as a constant", op)

    def mil_type(self, b):
        t = b.type if isinstance(b, Value) else self.types.get(b)
        return t.wrapped if isinstance(t, StateType) else t

    def tensor(self, op, key: str, index: int = 0) -> CValue:
        """Input `key` (its `index`-th binding) as a Core AI value."""
        found = op.inputs.get(key) or []
        if index >= len(found):
            raise PortError(f"{op.type} has no input {key}", op)
        return self.value_of(found[index], op)

    def tensors(self, op, key: str) -> list:
        return [self.value_of(b, op) for b in op.inputs.get(key, [])]

    def value_of(self, b, op=None) -> CValue:
        if isinstance(b, str) and b in self.values:
            return self.values[b]
        if isinstance(b, str) and b in self._consts:
            return self._consts[b]
        t = self.mil_type(b)
        if not isinstance(t, TensorType):
            raise PortError(f"{op.type if op else 'an op'} uses a value that is not a tensor", op)
        array = self.evaluator.value(b) if isinstance(b, Value) else self.known.get(b)
        if array is None:
            raise PortError(f"%{b} is not defined before {op.type if op else 'its use'}", op)
        array = np.asarray(array).reshape(t.shape) if t.is_static else np.asarray(array)
        c = self.constant(array, t.dtype, b if isinstance(b, str) else "c")
        if isinstance(b, str):
            self._consts[b] = c
        return c

    def out(self, op, index: int = 0) -> tuple:
        """(dtype, shape) of the op's `index`-th output, as the program declares it."""
        t = op.outputs[index].type
        t = t.wrapped if isinstance(t, StateType) else t
        if not isinstance(t, TensorType):
            raise PortError(f"{op.type} gives a value that is not a tensor", op)
        if not t.is_static:
            raise PortError(f"{op.type} gives %{op.outputs[index].name} of shape {t.shape}, which "
                            "is not static; Core AI ports need static shapes", op)
        return t.dtype, tuple(t.shape)

    def bind(self, op, *values: CValue) -> None:
        for var, v in zip(op.outputs, values):
            self.values[var.name] = v

    # ---- a block ----
    def block(self, block) -> list:
        """Lower every op of `block`; its outputs as Core AI values."""
        for op in block.operations:
            for var in op.outputs:
                self.types[var.name] = var.type
            self.op(op)
        return [self.value_of(name) if name in self.values or name in self.known
                else self._undefined(name) for name in block.outputs]

    def region(self, block, args: list, finish) -> str:
        """The text of one region of a `coreai.if`/`coreai.while`: `block` lowered inside it, its
        inputs bound to block arguments typed as `args` (CValues), ended by the terminator
        `finish(arguments, outputs)` gives as (op name, values). Constants written inside stay
        inside: the region does not dominate what follows it."""
        saved_lines, saved_consts, saved_indent = self.lines, self._consts, self.indent
        self.lines, self._consts = [], dict(self._consts)
        self.indent = saved_indent + "  "
        self.depth += 1
        try:
            params = []
            for var, like in zip(block.inputs, args):
                params.append(CValue(self.fresh(var.name), like.dtype, like.shape))
                self.types[var.name] = var.type
                self.values[var.name] = params[-1]
            name, values = finish(params, self.block(block))
            self.lines.append(self.indent + mlir.op_line(None, name, [v.ssa for v in values],
                                                         [v.type for v in values], []))
            head = (f"{saved_indent}^bb0({', '.join(f'{v.ssa}: {v.type}' for v in params)}):\n"
                    if params else "")
            return head + "\n".join(self.lines)
        finally:
            self.lines, self._consts, self.indent = saved_lines, saved_consts, saved_indent
            self.depth -= 1

    def _undefined(self, name):
        raise PortError(f"the block's output %{name} is not defined")

    def op(self, op) -> None:
        if op.type == "const" or self._foldable(op):
            try:
                self.evaluator.op(op, self.known, self.opset)
            except Exception as e:       # a kernel's own error: the op as run would fail too
                raise PortError(f"{op.type} cannot be computed ahead: {getattr(e, 'message', e)}", op) from None
            return
        fn = lowering(op.type)
        if fn is None:
            raise PortError(f"{op.type} has no Core AI lowering (miltext port --list-ops lists those that do)", op)
        try:
            fn(self, op)
        except PortError as e:
            if e.op is None:
                e.op = op
            raise
        missing = [v.name for v in op.outputs if v.name not in self.values and v.name not in self.known]
        if missing:
            raise PortError(f"{op.type}: its lowering left %{missing[0]} unset (a bug of miltext port)", op)

    def _foldable(self, op) -> bool:
        if op.type in _UNFOLDED or op.type.startswith(_UNFOLDED_PREFIXES) or op.blocks:
            return False
        return all(self._is_known(b) for bs in op.inputs.values() for b in bs)


def lower_program(program, evaluator, functions=None) -> str:
    """The MLIR text of the `coreai` module for `program` (every function, or `functions`)."""
    module = Module()
    for name, fn in program.functions.items():
        if functions is not None and name not in functions:
            continue
        module.graphs.append(lower_function(module, evaluator, name, fn))
    return module.text()


def lower_function(module: Module, evaluator, name: str, fn) -> str:
    low = Lowering(module, evaluator, name, fn.opset)
    args = []
    for var in fn.inputs:
        low.types[var.name] = var.type
        if isinstance(var.type, StateType):
            from .lowerings.states import state_argument
            args.append(state_argument(low, var))
            continue
        t = var.type
        if not isinstance(t, TensorType):
            raise PortError(f"input %{var.name} is not a tensor; Core AI graphs take tensors")
        v = CValue(low.fresh(var.name), t.dtype, t.shape)
        if not t.is_static:
            raise PortError(f"input %{var.name} has the flexible shape {t.shape}; Core AI ports need "
                            "static shapes")
        low.values[var.name] = v
        args.append(f'{v.ssa}: {v.type} {{coreai.name = "{var.name}"}}')
    outs = low.block(fn.block)
    results = [f'{o.type} {{coreai.name = "{n}"}}' for o, n in zip(outs, fn.block.outputs)]
    from .lowerings.states import TOKEN, final_tokens
    tokens = final_tokens(low)              # one per handle argument: the writes are kept
    results += [TOKEN] * len(tokens)
    body = "\n".join(low.lines)
    ret = ", ".join([o.ssa for o in outs] + tokens)
    ret_types = ", ".join([o.type for o in outs] + [TOKEN] * len(tokens))
    return (f"  coreai.graph @{name}({', '.join(args)}) -> ({', '.join(results)}) {{\n"
            f"{body}\n    \"coreai.output\"({ret}) : ({ret_types}) -> ()\n  }}\n")
