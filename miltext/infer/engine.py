"""The walk: every op of every block, in order, its inputs' types and known values in scope,
nested blocks before the op that owns them (cond and while_loop read their blocks' types)."""
from __future__ import annotations

import importlib.util

from . import registry
from .errors import InferenceError, Unsupported
from .operands import Operands, TypeScope
from .shapes import within_bounds
from .symbols import concrete, symbolic

COREMLTOOLS = "coremltools"     # the family reported for an op coremltools inferred


def infer(program, *, use_coremltools: bool = True, report=None) -> None:
    """Fill in every missing output type, in place. `report(op, family)` is told which family
    of native rules (or "coremltools") inferred each op. Raises InferenceError at the first op
    nothing can infer."""
    def visit(op, operands):
        if all(v.type is not None for v in op.outputs):
            return _declared_only(op, operands)
        types, family = _infer_op(op, operands, use_coremltools)
        if len(types) != len(op.outputs):
            raise InferenceError.at(op.loc, f"{op.type} has {len(types)} output(s), "
                                            f"the text names {len(op.outputs)}")
        for var, t in zip(op.outputs, types):
            if var.type is None:
                var.type = concrete(t)
        if report is not None:
            report(op, family)
        return types
    _walk(program, visit)


def walk(program, visit) -> None:
    """Calls `visit(op, operands)` for every op in program order, nested blocks first. What it
    returns (a list of types, or None) stands for the outputs the text leaves untyped, for the
    ops after it; nothing is changed (`check` walks this way)."""
    _walk(program, visit)


def inferred_types(program):
    """(op, types) for each op a native rule covers, its inputs typed as the text declares them
    (what `check` compares with the declared output types). Nothing is changed."""
    found = []

    def visit(op, operands):
        types = _native(op, operands)
        if types is not None:
            found.append((op, [concrete(t) for t in types]))
        return types
    _walk(program, visit)
    return found


def _native(op, operands):
    """The native rule's (symbolic) output types, or None when no rule covers the op."""
    found_rule = registry.native(op.type)
    if found_rule is None:
        return None
    try:
        return found_rule[1](operands)
    except (Unsupported, InferenceError):
        operands.output_values = None
        return None


def _declared_only(op, operands):
    """For an op the text types in full: the native rule's types all the same, so that their
    unknown sizes and the values the rule knows carry on to the ops after (where the declared
    types say more, they win: see `symbolic`)."""
    if op.type == "const":
        return None
    types = _native(op, operands)
    if types is not None and len(types) != len(op.outputs):
        operands.output_values = None
        return None
    return types


def _infer_op(op, operands, use_coremltools: bool):
    found = registry.native(op.type)
    if found is not None:
        family, rule = found
        try:
            return rule(operands), family
        except Unsupported:
            pass
        except InferenceError as e:
            raise InferenceError.at(op.loc, f"{op.type}: {e.message}") from None
    if use_coremltools and importlib.util.find_spec("coremltools") is not None:
        from . import coremltools_rules
        types = coremltools_rules.infer(operands)
        try:
            within_bounds(types)
        except InferenceError as e:
            raise InferenceError.at(op.loc, f"{op.type}: {e.message}") from None
        return types, COREMLTOOLS
    raise InferenceError.at(op.loc, f"cannot infer the output types of {op.type}: write them "
                                    f"(`%y: (2, 3, fp32) = {op.type}(...)`)")


def _walk(program, visit) -> None:
    for fn in program.functions.values():
        for key, block in fn.blocks.items():
            scope = TypeScope()
            for var in fn.inputs:
                scope.types[var.name] = symbolic(var.type)
            _block(block, key, scope, visit)


def _block(block, opset, scope, visit) -> None:
    for op in block.operations:
        step(op, opset, scope, visit)


def step(op, opset: str, scope: TypeScope, visit) -> None:
    """One op of the walk: its nested blocks, then `visit(op, operands)`, then its outputs'
    types and known values put into `scope`. (The language server infers op by op with it,
    each op in a scope of its own whose parent finds the names it reads.)"""
    operands = Operands(op, opset, scope)
    for inner in op.blocks:
        child = TypeScope(scope)
        for var in inner.inputs:
            child.types[var.name] = symbolic(var.type)
        _block(inner, opset, child, visit)
        operands.block_outputs.append([child.type(name) for name in inner.outputs])
    found = visit(op, operands)
    for i, var in enumerate(op.outputs):
        scope.types[var.name] = symbolic(found[i], var.type) if found and i < len(found) \
            else symbolic(var.type)
    if op.type == "const" and len(op.outputs) == 1 and "val" in op.attributes:
        scope.consts.add(op.outputs[0].name)
        scope.values[op.outputs[0].name] = op.attributes["val"]   # read as numpy when asked
    elif op.type.startswith("constexpr_"):    # compile-time constants too, for coremltools
        scope.consts.update(var.name for var in op.outputs)
    if op.type != "const" and operands.output_values is not None:
        for var, value in zip(op.outputs, operands.output_values):
            if value is not None:
                scope.values[var.name] = value

