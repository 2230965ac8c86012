"""`check` through inference: every op, in program order, is checked with the types inference
gives its inputs, whether the text declares them or not, so shorthand (`%y = relu(x=%x)`,
literals in place) is checked as fully typed text is. For each op: its inputs against the op
table (signature), its shapes against the op's rules (shapes/), then its output types, by
miltext's native rules or, where those give out, coremltools' (when installed), against the
types the text declares. An op found at fault leaves its untyped outputs unknown, so one
mistake is reported once, not at every op after it."""
from __future__ import annotations

import importlib.util
from functools import partial

from .. import ops as op_table
from ..infer import walk
from ..infer import registry
from ..infer.errors import InferenceError, Refused, Unsupported
from ..infer.symbols import concrete
from .. import dtypes
from ..ir import ListType, TensorType, Value
from . import coremltools_words, signature
from .compat import compatible, describe
from .context import Context, var
from .shapes import Mistake, Plain, rules_for

RULES = {
    "input-dtype": "error",       # an input of a dtype the op does not take
    "operand-dtypes": "error",    # inputs that must share a dtype do not (fp16 + fp32)
    "const-input": "error",       # an input that must be known at compile time is computed
    "enum-value": "error",        # a string input the op does not know ("float16" for a dtype)
    "operand-shapes": "error",    # shapes, ranks, axes or sizes the op cannot take
    "coremltools-inference": "error",  # an op coremltools' inference refuses
    "inferred-type": "error",     # a declared output type that contradicts inference
}


def check(ctx: Context) -> None:
    Verifier(ctx).run()


class Verifier:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.runtime: dict = {}       # id of a Scope -> names it defines known only at run time
        self.scopes: list = []        # the Scopes seen, kept alive so their ids stay theirs
        self.coremltools = None       # whether coremltools is there (asked once, when needed)
        self.cache: dict = {}         # coremltools' answers, by what it was asked

    def run(self) -> None:
        walk(self.ctx.program, self.visit)

    def _runtime_of(self, scope) -> set:
        found = self.runtime.get(id(scope))
        if found is None:   # first seen at its first op: all it holds is its inputs
            found = self.runtime[id(scope)] = set(scope.types)
            self.scopes.append(scope)
        return found

    def _is_runtime(self, name: str, scope) -> bool:
        owner = scope.owner(name)
        return owner is not None and name in self._runtime_of(owner)

    def visit(self, op, operands):
        scope = operands.scope
        self._runtime_of(scope)
        if op.type == "const":
            val = op.attributes.get("val")
            return [val.type] if val is not None else None
        types = self.verify(op, operands)
        if op.type.startswith("constexpr_"):   # a weight, as coremltools counts consts
            scope.consts.update(v.name for v in op.outputs)
        elif self._computed(op, operands):
            self._runtime_of(scope).update(v.name for v in op.outputs)
        return types

    def _computed(self, op, operands) -> bool:
        """Whether the op's outputs are known only at run time: some input is, and inference
        does not know the value (coremltools counts a `shape` of a static tensor constant)."""
        if operands.output_values and all(v is not None for v in operands.output_values):
            return False
        return bool(op.blocks) or any(isinstance(b, str) and self._is_runtime(b, operands.scope)
                                      for bindings in op.inputs.values() for b in bindings)

    def verify(self, op, operands):
        ctx = self.ctx
        if id(op) in ctx.faulty_ops:
            return None                # its call is wrong already (an unknown input, one missing)
        variant = op_table.variant(op.type, operands.opset)
        if variant is None:
            return None                # an unknown op, or one its opset lacks: the ops family says
        if any(isinstance(b, str) and operands.scope.type(b) is None
               for bindings in op.inputs.values() for b in bindings):
            return None                # an input of unknown type: nothing to check it with
        if op.type in ("cond", "while_loop"):
            return self.control_flow(op, operands)
        try:
            signature.check(operands, partial(self._is_runtime, scope=operands.scope), ctx.from_print)
            for rule in rules_for(op.type):
                rule(Plain(operands))
            types = self.infer(op, operands)
        except Mistake as m:
            self.report(op, m.rule, m.key, m.message)
            return m.meant
        except Refused as e:
            rule_key, message = coremltools_words.translate(op, operands, e.detail)
            self.report(op, "coremltools-inference", rule_key, message)
            return None
        except InferenceError as e:
            self.report(op, "operand-shapes", getattr(e, "key", None), f"{op.type}: {e.message}")
            return None
        except Unsupported:
            return None
        except _RULE_SLIPS:
            return None                # a value of a form no rule expects (a list for an axis):
            # the op is left unchecked rather than blamed for a rule's own gap
        if types is None or not all(map(_well_formed, types)):
            return None                # what a rule made of values of a form it does not expect
        self.compare(op, types)
        return types

    def control_flow(self, op, operands):
        """cond and while_loop: their inputs are checked here, their blocks by the structure
        family; their types, when their blocks agree, go on to the ops after them."""
        try:
            signature.check(operands, partial(self._is_runtime, scope=operands.scope), self.ctx.from_print)
            for rule in rules_for(op.type):
                rule(Plain(operands))
        except Mistake as m:
            self.report(op, m.rule, m.key, m.message)
            return None
        except (Unsupported, *_RULE_SLIPS):
            return None
        if op.type == "cond":
            self.cond_blocks(op, operands)
        elif len(op.blocks) == 2:
            self.loop_blocks(op, operands)
        try:
            return registry.native(op.type)[1](operands)
        except (InferenceError, Unsupported, *_RULE_SLIPS):
            return None

    # The structure family compares declared types; these compare what only inference knows,
    # the types of values the text leaves untyped (`%y = mul(...)` returned by a block).
    def cond_blocks(self, op, operands) -> None:
        branches = operands.block_outputs
        if len(branches) != 2 or not all(len(b) == len(op.outputs) for b in branches):
            return                     # the structure family reports it
        for j, out in enumerate(op.outputs):
            for block, types in zip(op.blocks, branches):
                if self._declared(block, j) is None and out.type is not None \
                        and not compatible(types[j], out.type):
                    self.ctx.error("cond-structure", self._block_output(block, j),
                                   f"{var(block.outputs[j])} is {describe(types[j])}, but the cond "
                                   f"block must return {describe(out.type)} here")
            if out.type is None and not compatible(branches[0][j], branches[1][j]) and (
                    self._declared(op.blocks[0], j) is None or self._declared(op.blocks[1], j) is None):
                self.ctx.error("cond-structure", self._block_output(op.blocks[1], j),
                               f"the two blocks of this cond return {describe(branches[0][j])} and "
                               f"{describe(branches[1][j])} as output {j}; they must return one type")

    def loop_blocks(self, op, operands) -> None:
        loop_vars = operands.types("loop_vars")
        condition, body = op.blocks
        for block in op.blocks:
            if len(block.inputs) != len(loop_vars):
                return                 # the structure family reports it
        for i, b in enumerate(op.inputs.get("loop_vars", ())):
            declared = self.ctx.binding_type(op, "loop_vars", i)
            for v in (condition.inputs[i], body.inputs[i]):
                if declared is None and not compatible(v.type, loop_vars[i]):
                    self.ctx.error("while-loop-structure", v.loc, f"{var(v.name)} is "
                                   f"{describe(v.type)}, but its loop variable is {describe(loop_vars[i])}")
        outputs = operands.block_outputs
        if len(outputs) == 2 and len(outputs[0]) == 1 and self._declared(condition, 0) is None:
            got = outputs[0][0]
            if isinstance(got, TensorType) and got.dtype != "bool":
                self.ctx.error("while-loop-structure", self._block_output(condition, 0),
                               f"the loop condition must return a bool, not {describe(got)}")
        if len(outputs) == 2 and len(outputs[1]) == len(body.inputs):
            for j, (got, v) in enumerate(zip(outputs[1], body.inputs)):
                if self._declared(body, j) is None and not compatible(got, v.type):
                    self.ctx.error("while-loop-structure", self._block_output(body, j),
                                   f"{var(body.outputs[j])} is {describe(got)}, but the loop body "
                                   f"must return {describe(v.type)} here")

    def _declared(self, block, index: int):
        target = self.ctx.target(block, None, index)
        return target.type if target is not None else None

    def _block_output(self, block, index: int):
        return partial(self.ctx.where.block_output, block.loc, block.outputs[index])

    def infer(self, op, operands):
        found = registry.native(op.type)
        if found is not None:
            try:
                return found[1](operands)
            except Unsupported:
                pass
        return self.infer_by_coremltools(op, operands)

    def infer_by_coremltools(self, op, operands):
        if self.coremltools is None:
            self.coremltools = importlib.util.find_spec("coremltools") is not None
        if not self.coremltools or (self.ctx.from_print and _has_literal(op)):
            return None                # a print's literals have guessed dtypes
        from ..infer import coremltools_rules
        key = _question(op, operands)
        if key is not None and key in self.cache:
            answer = self.cache[key]
        else:
            try:
                answer = (coremltools_rules.infer(operands), operands.output_values)
            except Refused as e:
                answer = e
            except InferenceError:
                answer = None          # what miltext cannot hand coremltools is no mistake
            if key is not None:
                self.cache[key] = answer
        if isinstance(answer, Refused):
            if _stood_in(op, operands):
                return None            # it was given zeros for a weight not at hand
            raise answer
        if answer is None:
            return None
        operands.output_values = answer[1]
        return answer[0]

    def compare(self, op, types) -> None:
        if self.ctx.from_print and _has_literal(op):
            return                     # a print's literals have guessed dtypes
        for out, inferred in zip(op.outputs, types):
            inferred = concrete(inferred)
            if out.type is not None and not compatible(out.type, inferred):
                self.ctx.error("inferred-type", out.loc or op.loc,
                               f"{var(out.name)} is declared {describe(out.type)}, but {op.type} "
                               f"gives {describe(inferred)}")

    def report(self, op, rule: str, key: str | None, message: str) -> None:
        where = self.ctx.where
        loc = partial(where.key, op.loc, key) if key is not None and where_has(op, key) \
            else partial(where.op_type, op.loc, op.type)
        self.ctx.error(rule, loc, message)


def _well_formed(t) -> bool:
    if isinstance(t, TensorType):
        return isinstance(t.dtype, str) and t.dtype in dtypes.BY_NAME and all(
            d is None or type(d) is int and d >= 0 for d in t.shape)
    if isinstance(t, ListType):
        return _well_formed(t.element) and (t.length is None or type(t.length) is int)
    return t is not None


_RULE_SLIPS = (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError)


def where_has(op, key: str) -> bool:
    return key in op.inputs or key in op.attributes


def _has_literal(op) -> bool:
    return any(isinstance(b, Value) for bindings in op.inputs.values() for b in bindings)


def _stood_in(op, operands) -> bool:
    """Whether coremltools was given a stand-in for an input: a const whose value is not at hand."""
    return any(c and v is None for key in op.inputs
               for c, v in zip(operands.consts(key), operands.values(key)))


def _question(op, operands):
    """What coremltools is asked about an op, as a key: its type, opset and each input's types
    and (small) values; None when a value is too big to be part of the key."""
    parts = [op.type, operands.opset]
    for key in list(op.inputs) + sorted(k for k in op.attributes if k != "name"):
        for t, v in zip(operands.types(key), operands.values(key)):
            if v is not None and v.size > 64:
                return None
            parts.append((key, repr(t), None if v is None else (v.dtype.str, v.shape, v.tobytes()
                                                                 if v.dtype != object else repr(v.tolist()))))
    return tuple(parts)

