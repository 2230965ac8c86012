"""--extract FROM,...:TO,...: the submodel that computes TO from FROM. FROM become the
function's inputs (the ops that made them go), TO its outputs, and only the ops TO needs stay;
what TO needs beyond FROM and the ops' consts is an error that names it."""
from __future__ import annotations

from ..ir import Var
from ..text.lexemes import var as spelt
from . import features
from .outputs import top_definition
from .scope import EditError, uses


def extract(fn_name: str, fn, sources: tuple, targets: tuple, descs: list) -> None:
    if len(fn.blocks) != 1:
        raise EditError(f"function {fn_name} has {len(fn.blocks)} block specializations; --extract cuts one")
    both = set(sources) & set(targets)
    if both:
        raise EditError(f"{spelt(sorted(both)[0])} is both an input and an output of the submodel")
    block = fn.block
    source_defs = {n: top_definition(fn_name, fn, n, "--extract") for n in sources}
    for n in targets:
        top_definition(fn_name, fn, n, "--extract")
    cut, needed, kept = set(sources), set(targets), []
    for op in reversed(block.operations):
        made = {v.name for v in op.outputs}
        if made & cut:
            also = sorted(made & needed - cut)
            if also:
                raise EditError(f"{spelt(also[0])} comes from the same {op.type} as "
                                f"{spelt(sorted(made & cut)[0])}: give all of that op's outputs as inputs, or none")
            continue
        if made & needed:
            kept.append(op)
            needed |= uses(op)
    outside = [v.name for v in fn.inputs if v.name in needed and v.name not in cut]
    if outside:
        raise EditError(f"the submodel needs {spelt(outside[0])}, an input of function {fn_name} that is not "
                        f"among FROM: add it (--extract {','.join((*sources, outside[0]))}:{','.join(targets)})")
    inputs = []
    for n in sources:
        var = source_defs[n].var
        if var.type is None:
            raise EditError(f"{spelt(n)} has no type to make an input of (`miltext infer` writes it)")
        inputs.append(var if source_defs[n].op is None else Var(n, var.type))
    fn.inputs = inputs
    block.operations = kept[::-1]
    block.outputs = list(targets)
    outputs = {v.name: v for op in kept for v in op.outputs}
    outputs.update((v.name, v) for v in inputs)
    features.set_signature(descs, inputs, [outputs[n] for n in targets])
