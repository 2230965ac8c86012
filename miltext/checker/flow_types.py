"""The blocks of cond and while_loop against the types inference gives what the text leaves
untyped: the structure family compares declared types only, so a block that returns
`%y = mul(...)`, or a loop variable bound to an untyped var, is compared here (under the
structure family's rule names)."""
from __future__ import annotations

from functools import partial

from ..infer.symbols import concrete
from ..ir import TensorType
from .compat import compatible, describe
from .context import var


def cond_blocks(ctx, op, operands) -> None:
    branches = [[concrete(t) for t in types] for types in operands.block_outputs]
    if len(branches) != 2 or not all(len(b) == len(op.outputs) for b in branches):
        return                     # the structure family reports it
    for j, out in enumerate(op.outputs):
        for block, types in zip(op.blocks, branches):
            if _declared(ctx, block, j) is None and out.type is not None \
                    and not compatible(types[j], out.type):
                ctx.error("cond-structure", _block_output(ctx, block, j),
                          f"{var(block.outputs[j])} is {describe(types[j])}, but the cond "
                          f"block must return {describe(out.type)} here")
        if out.type is None and not compatible(branches[0][j], branches[1][j]) and (
                _declared(ctx, op.blocks[0], j) is None or _declared(ctx, op.blocks[1], j) is None):
            ctx.error("cond-structure", _block_output(ctx, op.blocks[1], j),
                      f"the two blocks of this cond return {describe(branches[0][j])} and "
                      f"{describe(branches[1][j])} as output {j}; they must return one type")

def loop_blocks(ctx, op, operands) -> None:
    loop_vars = [concrete(t) for t in operands.types("loop_vars")]
    condition, body = op.blocks
    for block in op.blocks:
        if len(block.inputs) != len(loop_vars):
            return                 # the structure family reports it
    for i in range(len(op.inputs.get("loop_vars", ()))):
        declared = ctx.binding_type(op, "loop_vars", i)
        for v in (condition.inputs[i], body.inputs[i]):
            if declared is None and not compatible(v.type, loop_vars[i]):
                ctx.error("while-loop-structure", v.loc, f"{var(v.name)} is {describe(v.type)}, "
                          f"but its loop variable is {describe(loop_vars[i])}")
    outputs = [[concrete(t) for t in types] for types in operands.block_outputs]
    if len(outputs) == 2 and len(outputs[0]) == 1 and _declared(ctx, condition, 0) is None:
        got = outputs[0][0]
        if isinstance(got, TensorType) and got.dtype != "bool":
            ctx.error("while-loop-structure", _block_output(ctx, condition, 0),
                      f"the loop condition must return a bool, not {describe(got)}")
    if len(outputs) == 2 and len(outputs[1]) == len(body.inputs):
        for j, (got, v) in enumerate(zip(outputs[1], body.inputs)):
            if _declared(ctx, body, j) is None and not compatible(got, v.type):
                ctx.error("while-loop-structure", _block_output(ctx, body, j),
                          f"{var(body.outputs[j])} is {describe(got)}, but the loop body "
                          f"must return {describe(v.type)} here")


def _declared(ctx, block, index: int):
    target = ctx.target(block, None, index)
    return target.type if target is not None else None


def _block_output(ctx, block, index: int):
    return partial(ctx.where.block_output, block.loc, block.outputs[index])
