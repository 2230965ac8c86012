"""Which ops of an fp32 program go wrong when Core ML computes them in fp16, first cause first.

The program is run twice by the interpreter: as it is, and as a copy made the way coremltools'
FP16ComputePrecision pass (`add_fp16_cast`) makes the fp16 model. That pass casts every fp32
input of an op to fp16 and computes the op in fp16; casts between fp16 ops cancel, so between
ops every float value is fp16. The copy says the same in types: each op's fp32 outputs are
declared fp16 (the interpreter rounds every result to its declared dtype, overflow to inf as
Core ML gives), the function's fp32 inputs too, and its consts and literals are made fp16 by the
pass's own rules. A transform rather than a hook casting values between ops: the copy is a
program Session runs unchanged, and rounding where the types say is what the device does.

An op is a finding when its fp16 output overflows (inf where fp32 is finite), turns NaN, flushes
to zero a value that is not negligible at the tensor's scale, or is off by more than the budget
(a fraction of the tensor's largest magnitude). A finding that reads another finding's output
is a consequence, reported under the cause(s) it comes from."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import numpy as np

FP16_MAX = 65504.0
DEFAULT_BUDGET = 0.01

# The ops the pass leaves in fp32 (FP16ComputePrecision's unsupported ops). `cast` is among them,
# but a cast to fp32 that fp16 ops read is folded with the cast to fp16 the pass puts after it
# (cast_optimization), so here a cast's fp32 output is fp16 like any op's. A while_loop's or a
# cond's blocks are converted op by op; their own outputs stay as declared.
KEPT_IN_FP32 = frozenset({"while_loop", "cond", "make_list", "list_gather", "list_scatter",
                          "list_read", "list_write", "list_length", "read_state", "coreml_update_state"})
# From iOS17, these inputs stay fp32 in an fp16 op (mixed precision, for accuracy).
_FP32_PARAMS = {**{t: {"alpha"} for t in ("elu", "leaky_relu", "prelu", "thresholded_relu")},
                **{t: {"alpha", "beta"} for t in ("clamped_relu", "linear_activation", "scaled_tanh",
                                                  "sigmoid_hard", "softplus_parametric")},
                **{t: {"epsilon"} for t in ("inverse", "log", "rsqrt")}}
_REASONS = ("nan", "overflow", "underflow", "error")      # the order one op's reason is chosen in


@dataclass
class Finding:
    var: str                    # the output var, without %
    op: str                     # the op's name (its first output's when it has none)
    type: str
    line: int | None
    reason: str                 # overflow | nan | underflow | error
    max_abs_fp32: float
    max_abs_fp16: float         # of the finite fp16 elements
    count: int                  # elements at fault
    size: int
    max_error: float            # the worst finite difference, over the fp32 tensor's largest magnitude
    function: str = "main"
    consequences: list = field(default_factory=list)

    def as_json(self) -> dict:
        found = dataclasses.asdict(self)
        found["consequences"] = [c.as_json() for c in self.consequences]
        return found


def op_name(op) -> str:
    return op.name or (op.outputs[0].name if op.outputs else op.type)


# ---- the fp16 program ----
def fp16_program(program, const_value, keep: frozenset = frozenset()):
    """A copy of `program` computed in fp16 the way FP16ComputePrecision makes it: (the copy,
    how many ops it moved to fp16, the names of the casts it added). `const_value(op, function)`
    is a const op's value as fp32 runs it; the ops named in `keep` stay fp32, as an op_selector
    saying False for them keeps them. An fp16 op reading an fp32 value (a kept op's, a loop
    variable's) reads it through a cast to fp16, as the pass puts one there."""
    moved, casts = [0], set()
    was_fp32 = {v.name for v in _vars(program) if _is_fp32(v.type)}

    def block(b, fn_name, opset, consts, types):
        types = dict(types, **{v.name: v.type for v in b.inputs})
        made, ops = {}, []
        for op in b.operations:
            new = operation(op, fn_name, opset, consts, types)
            if new.outputs is not op.outputs:       # moved to fp16: its fp32 inputs cast to fp16
                new = _cast_inputs(new, types, made, ops, casts, "fp16", lambda t, name: _is_fp32(t))
            else:                                   # left in fp32: what was fp32 cast back to it
                new = _cast_inputs(new, types, made, ops, casts, "fp32",
                                   lambda t, name: name in was_fp32 and getattr(t, "dtype", None) == "fp16")
            ops.append(new)
            types.update({v.name: v.type for v in new.outputs})
        return dataclasses.replace(b, operations=ops)

    def operation(op, fn_name, opset, consts, types):
        blocks = [block(b, fn_name, opset, consts, types) for b in op.blocks]
        if op.type in KEPT_IN_FP32 or op_name(op) in keep or _big_scalar_input(op, consts):
            return dataclasses.replace(op, blocks=blocks) if blocks else op
        outputs = [dataclasses.replace(v, type=_fp16_type(v.type)) if _is_fp32(v.type) else v for v in op.outputs]
        if outputs == op.outputs:
            return dataclasses.replace(op, blocks=blocks) if blocks else op
        moved[0] += 1
        fp32_params = _FP32_PARAMS.get(op.type, set()) if _ios17(opset) else set()
        inputs = {key: [b if key in fp32_params else _fp16_literal(b) for b in found]
                  for key, found in op.inputs.items()}
        attributes = op.attributes
        if op.type == "const":
            value = op.attributes.get("val")
            adjusted = _const_fp16(const_value(op, fn_name))
            if adjusted is not None:      # the pass clips it, or keeps its tiny values off zero
                from ..ir import Value
                attributes = {**op.attributes, "val": Value.tensor(adjusted, "fp16")}
            elif value is not None and _is_literal(value):
                attributes = {**op.attributes, "val": _fp16_literal(value)}
        return dataclasses.replace(op, inputs=inputs, outputs=outputs, blocks=blocks, attributes=attributes)

    functions = {}
    for name, fn in program.functions.items():
        consts = {op.outputs[0].name: op for b in fn.blocks.values() for op in b.operations
                  if op.type == "const" and op.outputs}
        inputs = [dataclasses.replace(v, type=_fp16_type(v.type)) if _is_fp32(v.type) else v for v in fn.inputs]
        outer = {v.name: v.type for v in inputs}
        blocks = {opset: block(b, name, opset, consts, outer) for opset, b in fn.blocks.items()}
        functions[name] = dataclasses.replace(fn, inputs=inputs, blocks=blocks)
    return dataclasses.replace(program, functions=functions), moved[0], casts


def _cast_inputs(op, types: dict, made: dict, ops: list, casts: set, dtype: str, wanted):
    """`op` reading each var for which `wanted(its type, its name)` through a cast to `dtype`,
    one cast per var and block (added to `ops`, its name to `casts`)."""
    from ..ir import Operation, Value, Var
    inputs = {}
    for key, found in op.inputs.items():
        bound = []
        for b in found:
            if isinstance(b, str) and b in types and wanted(types[b], b):
                if (b, dtype) not in made:
                    cast = f"{b}_to_{dtype}"
                    while cast in types or cast in casts:
                        cast += "_"
                    cast_type = dataclasses.replace(types[b], dtype=dtype)
                    ops.append(Operation("cast", {"x": [b], "dtype": [Value.tensor(dtype)]}, [Var(cast, cast_type)],
                                         attributes={"name": Value.tensor(cast)}, loc=op.loc))
                    made[b, dtype] = cast
                    casts.add(cast)
                    types[cast] = cast_type
                b = made[b, dtype]
            bound.append(b)
        inputs[key] = bound
    return dataclasses.replace(op, inputs=inputs) if inputs != op.inputs else op


def _vars(program):
    """Every var a program declares: function and block inputs, op outputs."""
    from ..ir.walk import blocks, operations
    for fn in program.functions.values():
        yield from fn.inputs
    for b in blocks(program):
        yield from b.inputs
    for op in operations(program):
        yield from op.outputs


def _is_fp32(t) -> bool:
    from ..ir import TensorType
    return isinstance(t, TensorType) and t.dtype == "fp32"


def _fp16_type(t):
    return dataclasses.replace(t, dtype="fp16")


def _ios17(opset: str) -> bool:
    found = re.fullmatch(r"CoreML(\d+)", opset or "")
    return found is not None and int(found[1]) >= 7


def _is_literal(value) -> bool:
    from ..ir import TensorData, Value
    return isinstance(value, Value) and isinstance(value.data, TensorData) and _is_fp32(value.type)


def _fp16_literal(binding):
    """An fp32 literal input as the pass casts it; any other binding as it is."""
    if not _is_literal(binding):
        return binding
    from ..ir import Value
    array = binding.array
    adjusted = _const_fp16(array)
    return Value.tensor(adjusted if adjusted is not None else array.astype(np.float16), "fp16")


def _big_scalar_input(op, consts: dict) -> bool:
    """The pass leaves an op in fp32 when a scalar fp32 const it reads is finite and beyond
    fp16's range (a tensor const is clipped instead)."""
    for found in op.inputs.values():
        for b in found:
            value = consts[b].attributes.get("val") if isinstance(b, str) and b in consts else b
            if _is_literal(value) and not value.type.shape:
                v = abs(float(value.array))
                if FP16_MAX < v < 1e38:
                    return True
    return False


def _const_fp16(value):
    """A const's fp16 value where the pass makes it other than a plain cast, else None: finite
    values beyond ±65504 of a tensor clipped to it, and in a small const (under 400 elements)
    the values a cast would flush to zero kept at fp16's smallest subnormal."""
    if not isinstance(value, np.ndarray) or value.dtype != np.float32:
        return None
    with np.errstate(all="ignore"):
        finite = np.isfinite(value)
        big = finite & (np.abs(value) > FP16_MAX) if value.ndim else np.zeros((), bool)
        half = value.astype(np.float16)
        tiny = (half == 0) & (value != 0) if value.size < 400 else np.zeros(value.shape, bool)
    if not big.any() and not tiny.any():
        return None
    half = np.where(big, np.sign(value) * FP16_MAX, half).astype(np.float16)
    smallest = np.float16(2.0 ** -24)
    return np.where(tiny, np.where(value > 0, smallest, -smallest), half).astype(np.float16)


# ---- the check ----
def check(session32, session16, inputs: dict, function: str = "main", budget: float = DEFAULT_BUDGET, *,
          timeout=None, max_memory=None, threads=None, casts: frozenset = frozenset()) -> list:
    """The causes (each with its consequences), in program order, of running `session16` (the
    fp16 copy) where `session32` gives the reference. The fp16 run goes first and keeps its
    float values (mostly fp16: half the bytes of fp32's) until the fp32 run reaches the same op.
    timeout, max_memory and threads bound each run, as Session.run's do."""
    from ..interpreter import RunError
    from ..interpreter.evaluator import _reads
    from ..interpreter.limits import Limits, size_text
    limits = Limits(timeout, max_memory, threads)
    options = dict(timeout=timeout, max_memory=max_memory, threads=threads)
    halves, held = {}, [0]

    def keep(fn, path, op, values):
        if op.type == "const" or op.type.startswith("constexpr_") or op.outputs and op.outputs[0].name in casts:
            return       # weights (cast by the pass's rules, not computed) and the casts it adds
        for name, value in values.items():
            if isinstance(value, np.ndarray) and value.dtype.kind == "f":     # kept fp32 ops' too
                if held[0] + value.nbytes > limits.max_memory:
                    raise RunError(f"the fp16 values kept for the comparison reach --max-memory "
                                   f"({size_text(limits.max_memory)}) at %{name}", op.loc)
                halves[(path, name)] = value.copy()
                held[0] += value.nbytes

    session16.run(inputs, function, observer=keep, **options)

    causes: dict = {}       # var name -> the causes it comes from (findings only)
    found: list = []
    fn = session32.program.functions.get(function)
    for var in fn.inputs if fn is not None else ():
        given = inputs.get(var.name)
        if _is_fp32(var.type) and given is not None:     # cast to fp16 where the first op reads it
            ref = np.asarray(given, np.float32)
            finding = _finding(_Input(var), var.name, ref, ref.astype(np.float16), budget, function)
            if finding is not None:
                causes[var.name] = [finding]
                found.append(finding)

    def compare(fn, path, op, values):
        for name, value in values.items():
            half = halves.pop((path, name), None)
            if half is None or not isinstance(value, np.ndarray) or value.dtype.kind != "f":
                continue
            finding = _finding(op, name, value, half, budget, fn)
            if finding is None:
                continue
            parents = {id(c): c for read in _reads(op) for c in causes.get(read, ())}
            if parents:
                for cause in parents.values():
                    if all(c.var != name for c in cause.consequences):
                        cause.consequences.append(finding)
                causes[name] = list(parents.values())
            elif name not in causes:
                causes[name] = [finding]
                found.append(finding)

    session32.run(inputs, function, observer=compare, **options)
    return found


def _finding(op, name: str, ref, half, budget: float, function: str) -> Finding | None:
    """What is wrong with `half` (fp16) against `ref` (fp32), or None."""
    if half.shape != ref.shape or not ref.size:
        return None
    a, h = ref.astype(np.float32), half.astype(np.float32)
    with np.errstate(all="ignore"):
        finite = np.isfinite(a)
        scale = float(np.abs(a[finite]).max()) if finite.any() else 0.0
        both = finite & np.isfinite(h)
        diff = np.abs(h - a)
        faults = {
            "nan": ~np.isnan(a) & np.isnan(h),
            "overflow": finite & np.isinf(h),
            "underflow": finite & (a != 0) & (h == 0) & (np.abs(a) > budget * scale),
            "error": both & (diff > budget * scale),
        }
        worst = float(diff[both].max()) if both.any() else 0.0
    reason = next((r for r in _REASONS if faults[r].any()), None)
    if reason is None:
        return None
    finite_h = h[np.isfinite(h)]
    return Finding(var=name, op=op_name(op), type=op.type, line=op.loc[0] if op.loc else None,
                   reason=reason, max_abs_fp32=scale,
                   max_abs_fp16=float(np.abs(finite_h).max()) if finite_h.size else 0.0,
                   count=int(faults[reason].sum()), size=int(a.size),
                   max_error=worst / scale if scale else float(worst > 0), function=function)


class _Input:
    """A function input, reported where it is declared."""
    type, name, outputs = "input", None, ()

    def __init__(self, var):
        self.name, self.loc = var.name, var.loc


# ---- what to do about it ----
def selector(names: list, model: str) -> str:
    """A runnable Python snippet: coremltools' FP16ComputePrecision with an op_selector that
    keeps the ops `names` in fp32."""
    listed = "".join(f"    {n!r},\n" for n in names)
    return (f"# The ops `miltext fp16-check {model}` found going wrong in fp16: kept in fp32, the rest in fp16.\n"
            "import coremltools as ct\n\n"
            f"FP32_OPS = {{\n{listed}}}\n\n\n"
            "def op_selector(op):\n"
            "    return op.name not in FP32_OPS\n\n\n"
            "compute_precision = ct.transform.FP16ComputePrecision(op_selector=op_selector)\n"
            "# mlmodel = ct.convert(traced, inputs=..., compute_precision=compute_precision)\n")
