"""Types for hover and inlay hints: a var's declaration as its dialect writes it, and the types
inference gives the outputs a text leaves untyped (the shorthand)."""
from __future__ import annotations

from dataclasses import replace

from ..infer import InferenceError, infer
from ..ir import Block, Function, Program, Var
from ..ir.types import UnknownType
from ..text.modelmil import printer as modelmil_printer
from ..text.mil import printer
from ..text.modelmil.words import text_version

# Inference stops at an op it cannot type; it is given up on and the walk goes on, this often.
MOST_FAILURES = 50


def declaration(name: str, t, modelmil: bool, program) -> str:
    if not modelmil:
        return printer.var_decl(Var(name, t))
    if t is None:
        return name
    return f"{modelmil_printer.type_text(t, text_version(program or Program()))} {name}"


def inferred_types(program: Program) -> dict:
    """id(var) -> inferred type, for each op output the text leaves untyped (by miltext's own
    rules: coremltools is not loaded in an editor's server). The program is not changed."""
    originals: dict = {}
    clone = Program(functions={name: Function(inputs=fn.inputs, opset=fn.opset, attributes=fn.attributes,
                                              blocks={k: _block(b, originals) for k, b in fn.blocks.items()})
                               for name, fn in program.functions.items()},
                    version=program.version, attributes=program.attributes)
    if not originals:
        return {}
    for _ in range(MOST_FAILURES):
        try:
            infer(clone, use_coremltools=False)
            break
        except InferenceError as e:  # give that op up and go on past it
            untyped = [v for v, _, at in originals.values() if v.type is None and at == e.loc] or \
                      [v for v, _, _ in originals.values() if v.type is None][:1]
            if not untyped:
                break
            for v in untyped:
                v.type = UnknownType()
    return {id(original): v.type for v, original, _ in originals.values()
            if v.type is not None and not isinstance(v.type, UnknownType)}


def _block(block: Block, originals: dict) -> Block:
    ops = []
    for op in block.operations:
        outputs = []
        for v in op.outputs:
            if v.type is None:
                copy = Var(v.name, None, v.loc)
                originals[id(copy)] = (copy, v, op.loc)
                outputs.append(copy)
            else:
                outputs.append(v)
        ops.append(replace(op, outputs=outputs, blocks=[_block(b, originals) for b in op.blocks]))
    return replace(block, operations=ops)


def hints(analysis, first: int, last: int) -> list[tuple]:
    """(place, label) of an inferred type after each untyped op output on lines [first, last]."""
    from bisect import bisect_left, bisect_right
    from ..text.lexemes import var
    from .index import written_end
    reading = analysis.reading
    starts = analysis.index._piece_starts
    out = []
    for p in reading.pieces[max(bisect_right(starts, first) - 1, 0):bisect_left(starts, last + 1)]:
        stack = list(p.ops)
        while stack:
            op = stack.pop()
            for v in op.outputs:
                if v.type is None and v.loc and first <= v.loc[0] - 1 <= last:
                    t = analysis.inferred(v)
                    if t is not None:
                        written = v.name if analysis.modelmil else var(v.name)
                        label = declaration(v.name, t, analysis.modelmil, analysis.program)
                        label = label[len(written):] if label.startswith(written) else " " + label
                        start = (v.loc[0] - 1, v.loc[1] - 1)
                        out.append(((start[0], written_end(reading.lines, start, v.name, analysis.index.syntax)), label))
            for b in op.blocks:
                stack.extend(b.operations)
    return sorted(out)
