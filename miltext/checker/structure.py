"""Structure: each function has the block its opset names and its specializations agree;
cond and while_loop have the blocks their semantics need, matching their outputs."""
from __future__ import annotations

from .. import dtypes, ops as op_table
from ..ir import TensorType
from .compat import compatible, describe
from .context import Context, count, var

RULES = {
    "missing-specialization": "error",    # blocks, but none for the function's opset
    "no-blocks": "warning",               # a function with no block at all
    "specialization-outputs": "warning",  # specializations of one function return differently
    "cond-structure": "error",
    "while-loop-structure": "error",
    "unexpected-blocks": "error",         # a known op other than cond/while_loop with blocks
}


def check(ctx: Context) -> None:
    unknown = getattr(ctx.program, "unknown_fields", None)
    if unknown:  # a newer writer's fields: kept, but nothing here knows what they mean
        ctx.warning("unknown-fields", None, f"the program has fields this version of miltext does not "
                    f"know, in {len(unknown)} place(s) (first: {min(unknown)}); they are kept as they are, "
                    "unchecked")
    for name, fn in ctx.program.functions.items():
        _specializations(ctx, name, fn)
    for _, _, op in ctx.ops:
        _dtypes(ctx, op)
        if op.type == "cond":
            _cond(ctx, op)
        elif op.type == "while_loop":
            _while_loop(ctx, op)
        elif op.blocks and op.type in op_table.table()["ops"]:
            ctx.error("unexpected-blocks", op.loc, f"{op.type} takes no blocks, but has {len(op.blocks)}")


def _dtypes(ctx: Context, op) -> None:
    """A type whose dtype code is none MIL.proto has (dtype-1, dtype99): Core ML cannot read it."""
    types = [v.type for v in op.outputs]
    types += [v.type for v in op.attributes.values()]
    types += [b.type for bindings in op.inputs.values() for b in bindings if hasattr(b, "type")]
    for t in types:
        bad = _bad_dtype(t)
        if bad is not None:
            ctx.error("unknown-dtype", op.loc, f"{op.type} has a value or var of dtype code {bad[5:]}, "
                      "which is not a dtype")
            return


def _bad_dtype(t, depth: int = 0):
    if t is None or depth > 32:
        return None
    if type(t) is TensorType:
        return t.dtype if t.dtype.startswith("dtype") and t.dtype not in dtypes.BY_NAME else None
    parts = [getattr(t, name, None) for name in ("element", "key", "value", "wrapped")] + list(getattr(t, "types", ()))
    return next((b for b in (_bad_dtype(x, depth + 1) for x in parts) if b is not None), None)


def _specializations(ctx: Context, name: str, fn) -> None:
    if not fn.blocks:
        ctx.warning("no-blocks", fn.loc, f"function {name} has no block: there is nothing to run")
        return
    main = fn.blocks.get(fn.opset)
    if main is None:
        keys = ", ".join(repr(k) for k in fn.blocks)
        ctx.error("missing-specialization", fn.loc,
                  f"function {name} has no block for its opset {fn.opset!r} (only for {keys})")
        return
    for key, other in fn.blocks.items():
        if other is main:
            continue
        if len(other.outputs) != len(main.outputs):
            ctx.warning("specialization-outputs", other.loc,
                        f"the {key} block of {name} returns {count(len(other.outputs), 'value')}, its "
                        f"{fn.opset} block {len(main.outputs)}",
                        [ctx.note(main.loc, f"the {fn.opset} block")])
            continue
        for i, out in enumerate(other.outputs):
            mine, theirs = _output_type(ctx, other, i), _output_type(ctx, main, i)
            if not compatible(mine, theirs):
                ctx.warning("specialization-outputs", ctx.where.block_output(other.loc, out),
                            f"output {i} of the {key} block of {name} is {describe(mine)}, of its "
                            f"{fn.opset} block {describe(theirs)}",
                            [ctx.note(ctx.where.block_output(main.loc, main.outputs[i]), "returned here")])


def _output_type(ctx: Context, block, index: int):
    target = ctx.target(block, None, index)
    return target.type if target is not None else None


def _returns(ctx: Context, op, block, rule: str, what: str, expected: list) -> None:
    """The block returns one value per entry of `expected` (types, None: any), each agreeing."""
    if len(block.outputs) != len(expected):
        ctx.error(rule, ctx.where.block_output(block.loc),
                  f"this {what} returns {count(len(block.outputs), 'value')}; it must return {len(expected)}",
                  [ctx.note(op.loc, f"the {op.type}")])
        return
    for i, (name, want) in enumerate(zip(block.outputs, expected)):
        got = _output_type(ctx, block, i)
        if not compatible(got, want):
            ctx.error(rule, ctx.where.block_output(block.loc, name),
                      f"{var(name)} is {describe(got)}, but the {what} must return {describe(want)} here")


def _cond(ctx: Context, op) -> None:
    rule = "cond-structure"
    if len(op.blocks) != 2:
        ctx.error(rule, op.loc, f"cond has {count(len(op.blocks), 'block')}; it needs two (then and else)")
    for block in op.blocks:
        if block.inputs:
            ctx.error(rule, block.loc, "a cond block takes no inputs")
        _returns(ctx, op, block, rule, "cond block", [v.type for v in op.outputs])


def _while_loop(ctx: Context, op) -> None:
    rule = "while-loop-structure"
    if "loop_vars" not in op.inputs:
        return  # the op rules report the missing input
    loop_vars = [ctx.binding_type(op, "loop_vars", i) for i in range(len(op.inputs["loop_vars"]))]
    n = len(loop_vars)
    if len(op.outputs) != n:
        ctx.error(rule, op.loc, f"while_loop has {count(n, 'loop variable')} but "
                  f"{count(len(op.outputs), 'output')}")
    if len(op.blocks) != 2:
        ctx.error(rule, op.loc, f"while_loop has {count(len(op.blocks), 'block')}; it needs two "
                  "(a condition and a body)")
        return
    for block in op.blocks:
        if len(block.inputs) != n:
            ctx.error(rule, block.loc, f"this while_loop block has {count(len(block.inputs), 'input')}; "
                      f"the loop has {count(n, 'loop variable')}")
            continue
        for v, want in zip(block.inputs, loop_vars):
            if not compatible(v.type, want):
                ctx.error(rule, v.loc, f"{var(v.name)} is {describe(v.type)}, but its loop "
                          f"variable is {describe(want)}")
    condition, body = op.blocks
    _returns(ctx, op, condition, rule, "loop condition", [None])
    if len(condition.outputs) == 1:
        got = _output_type(ctx, condition, 0)
        if got is not None and not (isinstance(got, TensorType) and got.dtype == "bool"):
            ctx.error(rule, ctx.where.block_output(condition.loc, condition.outputs[0]),
                      f"the loop condition must return a bool, not {describe(got)}")
    carried = [v.type for v in body.inputs] if len(body.inputs) == n else loop_vars
    _returns(ctx, op, body, rule, "loop body", carried)
