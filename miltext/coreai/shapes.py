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


def pinned(program, pins: dict, described: dict):
    """`program` itself when every input is static, else a copy whose flexible inputs take a
    static shape (see the module's doc) and whose types are inferred again. Also the shapes
    chosen: function -> input -> shape, for the report."""
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
    return program, chosen


def _shape(name: str, t: TensorType, pins: dict, described: dict) -> tuple:
    for source in (pins, described):
        shape = source.get(name)
        if shape is not None and len(shape) == len(t.shape) and all(
                type(d) is not int or d == s for d, s in zip(t.shape, shape)):
            return tuple(int(s) for s in shape)
    return tuple(d if type(d) is int else (FIRST_DIM if i == 0 else OTHER_DIM) for i, d in enumerate(t.shape))


def _said(chosen: dict) -> str:
    return ", ".join(f"%{n}{s}" for shapes in chosen.values() for n, s in shapes.items())
