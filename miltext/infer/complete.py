"""The sugar of hand-written MIL made explicit. An op written without `name=` takes its first
output's name (as coremltools' builder names ops), and its literal arguments become `const` ops
named `<op>_<input>_0` the way coremltools exports them, except where MIL wants the value itself.
An op with a name is explicit: its literals stay value bindings, as a proto may hold them."""
from __future__ import annotations

from ..ir import Operation, Value, Var
from ..ir.walk import blocks, operations


def complete(program) -> None:
    """Names and consts made explicit, in place (types are `infer`'s job)."""
    materialize_literals(program, _nameless(program))
    fill_names(program)


def fill_names(program) -> None:
    for op in _nameless(program):
        op.name = op.outputs[0].name


def _nameless(program) -> list:
    return [op for op in operations(program) if "name" not in op.attributes and op.outputs]


def keeps_values(op_type: str, key: str) -> bool:
    """Inputs that MIL takes as values, not as names of consts (coremltools exports these so)."""
    return (op_type.startswith("constexpr_") or (op_type, key) in _VALUE_INPUTS)


_VALUE_INPUTS = {("classify", "classes"), ("reshape_like", "begins"), ("reshape_like", "ends"),
                 ("reshape_like", "end_masks")}


def materialize_literals(program, ops) -> None:
    """The literal arguments of `ops` (each named, or to be named by its first output) as
    const ops placed right before it."""
    taken = _defined_names(program)
    chosen = {id(op) for op in ops}
    for block in blocks(program):
        operations = []
        for op in block.operations:
            if op.type != "const" and id(op) in chosen:
                op_name = op.name or op.outputs[0].name
                for key, bindings in op.inputs.items():
                    if keeps_values(op.type, key):
                        continue
                    for i, b in enumerate(bindings):
                        if isinstance(b, Value):
                            stem = f"{op_name}_{key}{i if len(bindings) > 1 else ''}"
                            name = _fresh(stem, taken)
                            operations.append(_const(name, b, op.loc))
                            bindings[i] = name
            operations.append(op)
        block.operations = operations


def _const(name: str, value: Value, loc) -> Operation:
    const = Operation("const", outputs=[Var(name, None, loc)], attributes={"val": value}, loc=loc)
    const.name = name
    return const


def _fresh(stem: str, taken: set) -> str:
    """`stem_0`, or `stem_1`, ... when that is taken, as coremltools' unique names go."""
    n = 0
    while f"{stem}_{n}" in taken:
        n += 1
    taken.add(f"{stem}_{n}")
    return f"{stem}_{n}"


def _defined_names(program) -> set:
    names = set()
    for fn in program.functions.values():
        names.update(v.name for v in fn.inputs)
    for block in blocks(program):
        names.update(v.name for v in block.inputs)
        for op in block.operations:
            names.update(v.name for v in op.outputs)
    return names
