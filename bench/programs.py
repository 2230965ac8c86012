"""Benchmark programs: transformer-like MIL programs of a chosen op count, and one huge const.

Every generator returns serialized MIL Program bytes (deterministic serialization), because
that is what every timed step starts from: miltext decodes it, coremltools loads it, protobuf
parses it. Generation is deterministic (fixed seeds, explicit names), so a cached file stays
valid across runs and machines.

The transformer is written once (`transformer_layer`) against a tiny emitter interface with two
back ends: coremltools' MIL builder (the realistic source: its type inference and proto export
produce what converted models look like) and miltext's own object model (for machines without
coremltools); both emit the same proto bytes. Weights are small and stored as immediate
values, so no weight file is needed.
"""
from __future__ import annotations

import importlib.util
import math

import numpy as np

import miltext
from miltext import Block, Function, Operation, Program, TensorType, Value, Var

OPSET = "CoreML7"          # iOS17: the opset coremltools writes for specification version 8
SPEC_VERSION = 8
SEQ, D_MODEL, HEADS, D_FF = 4, 8, 2, 32   # tiny dims: DxD weights print inline, DxF as b64
D_HEAD = D_MODEL // HEADS
INPUT_SHAPE = (1, SEQ, D_MODEL)


def have_coremltools() -> bool:
    """Whether coremltools is installed (found, not imported: importing it takes seconds)."""
    return importlib.util.find_spec("coremltools") is not None


# ---- the transformer, once for both back ends --------------------------------------------------

def transformer_layer(e, x, prefix: str, rng: np.random.RandomState):
    """One pre-LayerNorm transformer block on x: (1, SEQ, D_MODEL); returns the new x."""
    h = _layer_norm(e, x, f"{prefix}_ln1", rng)
    q = _heads(e, _linear(e, h, D_MODEL, D_MODEL, f"{prefix}_q", rng), f"{prefix}_q", (0, 2, 1, 3))
    k = _heads(e, _linear(e, h, D_MODEL, D_MODEL, f"{prefix}_k", rng), f"{prefix}_k", (0, 2, 3, 1))
    v = _heads(e, _linear(e, h, D_MODEL, D_MODEL, f"{prefix}_v", rng), f"{prefix}_v", (0, 2, 1, 3))
    scores = _matmul(e, q, k, f"{prefix}_scores", (1, HEADS, SEQ, SEQ))
    scaled = e.op("mul", f"{prefix}_scaled", scores.shape, x=scores,
                  y=e.const(f"{prefix}_scale", np.float32(1 / math.sqrt(D_HEAD))))
    mask = np.triu(np.full((1, 1, SEQ, SEQ), -1e4, np.float32), k=1)
    masked = e.op("add", f"{prefix}_masked", scores.shape, x=scaled, y=e.const(f"{prefix}_mask", mask))
    probs = e.op("softmax", f"{prefix}_probs", scores.shape, x=masked,
                 axis=e.const(f"{prefix}_probs_axis", np.int32(-1)))
    ctx = _matmul(e, probs, v, f"{prefix}_ctx", (1, HEADS, SEQ, D_HEAD))
    ctx = e.op("transpose", f"{prefix}_ctx_t", (1, SEQ, HEADS, D_HEAD), x=ctx,
               perm=e.const(f"{prefix}_ctx_perm", np.array([0, 2, 1, 3], np.int32)))
    ctx = e.op("reshape", f"{prefix}_ctx_flat", INPUT_SHAPE, x=ctx,
               shape=e.const(f"{prefix}_ctx_shape", np.array(INPUT_SHAPE, np.int32)))
    x = e.op("add", f"{prefix}_res1", INPUT_SHAPE, x=x, y=_linear(e, ctx, D_MODEL, D_MODEL, f"{prefix}_o", rng))
    h = _layer_norm(e, x, f"{prefix}_ln2", rng)
    f = _linear(e, h, D_MODEL, D_FF, f"{prefix}_ff1", rng)
    f = e.op("gelu", f"{prefix}_gelu", f.shape, x=f, mode=e.const(f"{prefix}_gelu_mode", "TANH_APPROXIMATION"))
    f = _linear(e, f, D_FF, D_MODEL, f"{prefix}_ff2", rng)
    return e.op("add", f"{prefix}_res2", INPUT_SHAPE, x=x, y=f)


def _weights(rng, *shape) -> np.ndarray:
    return (rng.standard_normal(shape) * 0.1).astype(np.float32)


def _layer_norm(e, x, name, rng):
    return e.op("layer_norm", name, x.shape, x=x,
                axes=e.const(f"{name}_axes", np.array([-1], np.int32)),
                gamma=e.const(f"{name}_gamma", 1 + _weights(rng, D_MODEL)),
                beta=e.const(f"{name}_beta", _weights(rng, D_MODEL)),
                epsilon=e.const(f"{name}_epsilon", np.float32(1e-5)))


def _linear(e, x, n_in, n_out, name, rng):
    return e.op("linear", name, x.shape[:-1] + (n_out,), x=x,
                weight=e.const(f"{name}_weight", _weights(rng, n_out, n_in)),
                bias=e.const(f"{name}_bias", _weights(rng, n_out)))


def _heads(e, x, name, perm):
    """(1, SEQ, D_MODEL) → per-head layout: reshape to (1, SEQ, HEADS, D_HEAD), then permute."""
    split = (1, SEQ, HEADS, D_HEAD)
    x = e.op("reshape", f"{name}_split", split, x=x,
             shape=e.const(f"{name}_split_shape", np.array(split, np.int32)))
    return e.op("transpose", f"{name}_heads", tuple(split[i] for i in perm), x=x,
                perm=e.const(f"{name}_heads_perm", np.array(perm, np.int32)))


def _matmul(e, x, y, name, shape):
    return e.op("matmul", name, shape, x=x, y=y,
                transpose_x=e.const(f"{name}_transpose_x", False),
                transpose_y=e.const(f"{name}_transpose_y", False))


def build_transformer(e, n_ops: int, seed: int):
    """Stack layers until one more would pass n_ops, then pad with identity ops to exactly
    n_ops, so 50k/10k time ratios compare programs exactly 5x apart. Returns the output."""
    rng = np.random.RandomState(seed)
    x = e.input
    layer = 0
    while True:
        before = e.count
        x = transformer_layer(e, x, f"layers_{layer}", rng)
        layer += 1
        if e.count + (e.count - before) > n_ops:
            break
    for i in range(n_ops - e.count):
        x = e.op("identity", f"pad_{i}", x.shape, x=x)
    if e.count != n_ops:
        raise ValueError(f"{n_ops} ops is fewer than one transformer layer ({e.count})")
    return x


# ---- back end 1: coremltools' MIL builder ------------------------------------------------------

class _PymilVar:
    """A pymil Var with the shape the layer code expects (checked against pymil's inference,
    so the two back ends cannot drift apart)."""
    __slots__ = ("var", "shape")

    def __init__(self, var, shape):
        if tuple(var.shape) != tuple(shape):
            raise AssertionError(f"{var.name}: pymil infers {var.shape}, layer code says {shape}")
        self.var, self.shape = var, tuple(shape)


class PymilEmitter:
    """Emits ops into the pymil Function under construction (inside its `with` block)."""

    def __init__(self, func):
        from coremltools.converters.mil import Builder as mb
        self.mb, self.func = mb, func
        self.input = _PymilVar(func.inputs["x"], INPUT_SHAPE)

    @property
    def count(self) -> int:
        return len(self.func.operations)

    def const(self, name, value):
        """An explicit const op: pymil would otherwise name consts from a process-global
        counter, and the proto would depend on what was built before in the process."""
        var = self.mb.const(val=value, name=name)
        return _PymilVar(var, var.shape)

    def op(self, op_type, name, shape, /, **inputs):
        var = getattr(self.mb, op_type)(name=name, **{k: v.var for k, v in inputs.items()})
        return _PymilVar(var, shape)


def coremltools_transformer(n_ops: int, seed: int = 0):
    """The transformer as a pymil Program (coremltools' in-memory MIL)."""
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import Function, Program as PymilProgram

    prog = PymilProgram()
    with Function({"x": mb.placeholder(shape=INPUT_SHAPE)}, opset_version=ct.target.iOS17) as func:
        out = build_transformer(PymilEmitter(func), n_ops, seed)
        func.set_outputs([out.var])
    prog.add_function("main", func)
    return prog


def pymil_to_proto_bytes(prog) -> bytes:
    """Serialize a pymil Program with every const as an immediate value.

    coremltools' exporter (backend/mil/load.py) sends consts of 10+ elements to a weight file;
    overriding its per-value hook keeps the program self-contained, so both miltext and
    coremltools' loader can read it without a weights directory."""
    from coremltools.converters.mil.backend.mil.helper import create_immediate_value
    from coremltools.converters.mil.backend.mil.load import MILProtoExporter

    class ImmediateExporter(MILProtoExporter):
        def get_milproto_value(self, var):
            return create_immediate_value(var)

    msg = ImmediateExporter(prog, weights_dir="", specification_version=SPEC_VERSION).export()
    return msg.SerializeToString(deterministic=True)


def weights_in_a_file_proto(n_ops: int, folder: str, seed: int = 0) -> tuple[bytes, str]:
    """The transformer as a converted model keeps it: coremltools' own exporter, which sends
    every const of 10 or more elements to `folder`/weight.bin and leaves a blob reference."""
    from coremltools.converters.mil.backend.mil.load import MILProtoExporter
    msg = MILProtoExporter(coremltools_transformer(n_ops, seed), weights_dir=folder,
                           specification_version=SPEC_VERSION).export()
    return msg.SerializeToString(deterministic=True), "coremltools MIL builder, weights in a file"


# ---- back end 2: miltext's object model ---------------------------------------------------------

class _Ref(str):
    """A var name with its shape."""
    shape: tuple

    def __new__(cls, name, shape):
        ref = super().__new__(cls, name)
        ref.shape = tuple(shape)
        return ref


class MiltextEmitter:
    """Appends ops to a miltext Block; types are the shapes the layer code states.
    (`op`'s leading parameters are positional-only: reshape has an input called `shape`.)"""

    def __init__(self, block: Block, input_var: Var):
        self.block = block
        self.input = _Ref(input_var.name, input_var.type.shape)

    @property
    def count(self) -> int:
        return len(self.block.operations)

    def const(self, name, value):
        op = const_op(name, value)
        self.block.operations.append(op)
        return _Ref(name, op.outputs[0].type.shape)

    def op(self, op_type, name, shape, /, **inputs):
        self.block.operations.append(Operation(
            op_type, inputs={k: [str(v)] for k, v in inputs.items()},
            outputs=[Var(name, TensorType("fp32", shape))],
            attributes={"name": Value.tensor(name)}))
        return _Ref(name, shape)


def const_op(name: str, value) -> Operation:
    """A const op laid out as coremltools writes one: `name` and `val` attributes, no inputs."""
    val = Value.tensor(value)
    return Operation("const", outputs=[Var(name, val.type)],
                     attributes={"name": Value.tensor(name), "val": val})


def miltext_transformer(n_ops: int, seed: int = 0) -> Program:
    """The transformer built with miltext alone (no coremltools needed)."""
    x = Var("x", TensorType("fp32", INPUT_SHAPE))
    block = Block()
    out = build_transformer(MiltextEmitter(block, x), n_ops, seed)
    block.outputs = [str(out)]
    return _single_function_program([x], block)


def _single_function_program(inputs, block) -> Program:
    return Program(functions={"main": Function(inputs=inputs, opset=OPSET, blocks={OPSET: block})})


def to_bytes(program: Program) -> bytes:
    return program.to_proto().SerializeToString(deterministic=True)


# ---- the entry points run.py uses ----------------------------------------------------------------

def transformer_proto(n_ops: int, seed: int = 0, use_coremltools: bool | None = None) -> tuple[bytes, str]:
    """The transformer program of n_ops ops as proto bytes, and how it was made."""
    if use_coremltools is None:
        use_coremltools = have_coremltools()
    if not use_coremltools:
        return to_bytes(miltext_transformer(n_ops, seed)), "miltext object model"
    return pymil_to_proto_bytes(coremltools_transformer(n_ops, seed)), "coremltools MIL builder"


def big_const_proto(n_elements: int = 1_000_000, seed: int = 0) -> tuple[bytes, str]:
    """One const op holding n_elements random fp32 values as an immediate tensor: the case
    where bulk tensor data, not op count, dominates."""
    side = math.isqrt(n_elements)
    shape = (side, side) if side * side == n_elements else (n_elements,)
    data = np.random.RandomState(seed).standard_normal(shape).astype(np.float32)
    block = Block(outputs=["w"], operations=[const_op("w", data)])
    return to_bytes(_single_function_program([], block)), "miltext object model"


def op_count(pb: bytes) -> int:
    """Top-level ops of main, counted from the proto (nested blocks have none here)."""
    return len(miltext.Program.from_proto(pb).functions["main"].block.operations)
