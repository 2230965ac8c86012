"""Static shapes for a port: Core AI graphs here take static shapes, so a flexible input is
pinned (by the input given for the check, by --shape, by the model description's default
shape, else 1 for the first dim and 8 for the others) and the function's types inferred again."""
from __future__ import annotations

import copy

from ..ir import StateType, TensorType
from .errors import PortError

FIRST_DIM, OTHER_DIM = 1, 8


def described_shapes(spec) -> dict:
    """input name -> default shape, from a model description (empty without one)."""
    shapes = {}
    if spec is None:
        return shapes
    for feature in spec.description.input:
        array = feature.type.multiArrayType
        if feature.type.WhichOneof("Type") == "multiArrayType" and len(array.shape):
            shapes[feature.name] = tuple(int(d) for d in array.shape)
    return shapes


def pinned(program, pins: dict, described: dict, weights: str | None = None):
    """`program` itself when every input is static, else a copy whose flexible inputs take a
    static shape (see the module's doc) and whose types are inferred again; a shape inference
    cannot fix (a `tile` whose reps come from run-time shapes) is recorded from interpreter
    runs (`recorded`). Also the shapes chosen: function -> input -> shape, for the report."""
    chosen = {}
    for name, fn in program.functions.items():
        for var in fn.inputs:
            t = var.type
            if isinstance(t, TensorType) and not t.is_static:
                chosen.setdefault(name, {})[var.name] = _shape(var.name, t, pins, described)
    if not chosen:
        return program, chosen
    from ..infer import infer
    from ..infer.errors import InferenceError
    from ..ir.walk import operations
    program = copy.deepcopy(program)
    for name, shapes in chosen.items():
        fn = program.functions[name]
        for var in fn.inputs:
            if var.name in shapes:
                var.type = TensorType(var.type.dtype, shapes[var.name])
        for op in operations(fn):
            if op.type != "const":
                for out in op.outputs:
                    if not isinstance(out.type, StateType):
                        out.type = None
    try:
        infer(program)
    except InferenceError as e:
        raise PortError(f"the program's types cannot be inferred at the input shapes "
                        f"{_said(chosen)}: {e.message}") from None
    for name in chosen:
        recorded(program, name, weights)
    return program, chosen


RECORDING_RUNS = 2      # runs on different made-up inputs: a shape must be the same in each


def recorded(program, function: str, weights: str | None) -> None:
    """Give each output of `function` whose inferred shape is not static the shape it takes when
    the interpreter runs it, at the pinned input shapes, on made-up inputs. A shape that differs
    between runs (on other values, or from one pass of a loop to the next) depends on the
    data and stays unknown (the lowering then names the op); so does every shape when the
    interpreter cannot run the function."""
    from ..interpreter import RunError
    from ..interpreter.session import Session
    from ..ir.walk import operations
    from .verify import generated
    fn = program.functions[function]
    flexible = {out.name: out for op in operations(fn) for out in op.outputs
                if isinstance(out.type, TensorType) and not out.type.is_static}
    if not flexible:
        return
    seen: dict = {}

    def observe(_function, _path, _op, values):
        for name, value in values.items():
            if name in flexible:
                seen.setdefault(name, set()).add(tuple(getattr(value, "shape", ())))
    try:
        with Session(program, weights=weights) as session:
            for seed in range(RECORDING_RUNS):
                inputs, states = generated(fn, {}, seed)
                session.run(inputs, function, states, observer=observe)
    except (RunError, ValueError, MemoryError):
        return
    for name, shapes in seen.items():
        declared = flexible[name].type
        if len(shapes) == 1 and len(next(iter(shapes))) == len(declared.shape):
            flexible[name].type = TensorType(declared.dtype, next(iter(shapes)))


def _shape(name: str, t: TensorType, pins: dict, described: dict) -> tuple:
    for source in (pins, described):
        shape = source.get(name)
        if shape is not None and len(shape) == len(t.shape) and all(
                type(d) is not int or d == s for d, s in zip(t.shape, shape)):
            return tuple(int(s) for s in shape)
    return tuple(d if type(d) is int else (FIRST_DIM if i == 0 else OTHER_DIM) for i, d in enumerate(t.shape))


def _said(chosen: dict) -> str:
    return ", ".join(f"%{n}{s}" for shapes in chosen.values() for n, s in shapes.items())
