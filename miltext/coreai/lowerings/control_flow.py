"""Control flow: `cond` is the dialect's `if` (a predicate known ahead picks its block, lowered
in place; blocks that compute nothing are a `where`), `while_loop` its `while`: the condition block is the `before` region, ending in
`condition` with the loop vars; the body block the `after` region, ending in `yield`. Both
regions see the values defined before them, as MIL's blocks do."""
from __future__ import annotations

import numpy as np

from ..errors import PortError
from ..table import lowers
from .common import reshape, where


def _flag(low, v):
    """A predicate as the dialect's scalar `tensor<i1>`."""
    if v.dtype != "bool" or int(np.prod(v.shape)) != 1:
        raise PortError(f"a predicate of {v.type}, where Core AI takes one bool")
    return reshape(low, v, ())


def _checked(op, outs: list, declared: list, where: str) -> list:
    for got, want in zip(outs, declared):
        if (got.dtype, got.shape) != want:
            raise PortError(f"{op.type}: its {where} gives {got.type} where the op declares "
                            f"{want[0]} {want[1]}", op)
    return outs


def _emit_with_regions(low, op, name: str, operands: list, regions: list) -> None:
    """`name` on `operands` with `regions` (their texts); its results are the op's outputs."""
    from ..mlir import CValue
    declared = [low.out(op, i) for i in range(len(op.outputs))]
    base = low.fresh(op.outputs[0].name if op.outputs else "r")
    if len(declared) == 1:
        low.bind(op, CValue(base, *declared[0]))
    else:
        low.bind(op, *[CValue(f"{base}#{i}", d, s) for i, (d, s) in enumerate(declared)])
    head = "" if not declared else f"{base} = " if len(declared) == 1 else f"{base}:{len(declared)} = "
    types = ", ".join(CValue("", d, s).type for d, s in declared)
    body = "}, {\n".join(f"{text}\n{low.indent}" for text in regions)
    low.lines.append(f'{low.indent}{head}"coreai.{name}"({", ".join(v.ssa for v in operands)}) '
                     f'({{\n{body}}}) : ({", ".join(v.type for v in operands)}) -> ({types})')


@lowers("cond")
def cond(low, op):
    declared = [low.out(op, i) for i in range(len(op.outputs))]
    if low.is_known(op, "pred"):          # decided ahead: only the block taken is lowered
        taken = bool(np.asarray(low.known_value(op, "pred")).reshape(-1)[0])
        low.bind(op, *_checked(op, low.block(op.blocks[0 if taken else 1]), declared, "block"))
        return
    pred = _flag(low, low.tensor(op, "pred"))
    if all(inner.type == "const" for block in op.blocks[:2] for inner in block.operations):
        # blocks that only pick values: a `where` (Core AI's compiler cannot lower an `if`
        # that computes nothing, which it turns into a select of buffers)
        picks = zip(low.block(op.blocks[0]), low.block(op.blocks[1]), declared)
        low.bind(op, *[where(low, pred, a, b, out) for a, b, out in picks])
        return
    regions = [low.region(block, [], lambda _, outs: ("coreai.yield", _checked(op, outs, declared, "block")))
               for block in op.blocks[:2]]
    _emit_with_regions(low, op, "if", [pred], regions)


@lowers("while_loop")
def while_loop(low, op):
    declared = [low.out(op, i) for i in range(len(op.outputs))]
    inits = _checked(op, low.tensors(op, "loop_vars"), declared, "loop vars")
    if len(op.blocks) != 2:
        raise PortError("while_loop needs a condition block and a body block", op)
    before = low.region(op.blocks[0], inits,
                        lambda args, outs: ("coreai.condition", [_flag(low, outs[0]), *args]))
    after = low.region(op.blocks[1], inits,
                       lambda _, outs: ("coreai.yield", _checked(op, outs, declared, "body")))
    _emit_with_regions(low, op, "while", inits, [before, after])
