"""`check` through inference: every op, in program order, is checked with the types inference
gives its inputs, whether the text declares them or not, so shorthand (`%y = relu(x=%x)`,
literals in place) is checked as fully typed text is. For each op: its inputs against the op
table (signature), its shapes against the op's rules (shapes/), then its output types, by
miltext's native rules or, where those give out, coremltools' (when installed), against the
types the text declares. An op found at fault leaves its untyped outputs unknown, so one
mistake is reported once, not at every op after it."""
from __future__ import annotations

from functools import partial

from .. import dtypes, ops as op_table
from ..infer import registry, walk
from ..infer.errors import InferenceError, Refused, Unsupported
from ..infer.shapes import within_bounds
from ..infer.symbols import concrete, fully_known
from ..ir import ListType, TensorType, Value
from . import by_coremltools, flow_types, signature
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
        self.runtime: dict = {}       # id of a TypeScope -> names it defines known only at run time
        self.scopes: list = []        # the TypeScopes seen, kept alive so their ids stay theirs
        self._scope = None            # the scope of the op visited last
        self.coremltools = by_coremltools.Inference(ctx.from_print)

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
        if scope is not self._scope:            # a block's first op: note the block's inputs
            self._scope = scope
            self._runtime_of(scope)
        if op.type == "const":
            val = op.attributes.get("val")
            return [val.type] if val is not None and op.outputs and op.outputs[0].type is None else None
        typed, computed = self._inputs(op, scope)
        types = self.verify(op, operands) if typed else self.verify_call(op, operands)
        if computed and not op.type.startswith("constexpr_") and not (
                operands.output_values and all(map(fully_known, operands.output_values))):
            self._runtime_of(scope).update(v.name for v in op.outputs)
        return types

    def _inputs(self, op, scope) -> tuple:
        """(whether every input has a type, whether some input is known only at run time: then
        so are the outputs, unless inference knows their values, as coremltools counts a
        `shape` of a static tensor constant)."""
        typed, computed = True, bool(op.blocks)
        for bindings in op.inputs.values():
            for b in bindings:
                if isinstance(b, str):
                    owner = scope.owner(b)
                    if owner is None or owner.types[b] is None:
                        typed = False
                    elif not computed and b in self._runtime_of(owner):
                        computed = True
        return typed, computed

    def verify_call(self, op, operands) -> None:
        """An op with an input of unknown type (its maker was at fault): what its definition says
        of the inputs that are known (a dtype string, a const input) is still checked, so one
        mistake does not hide the next; shapes and types wait for the maker's fix."""
        if id(op) in self.ctx.faulty_ops or op_table.variant(op.type, operands.opset) is None \
                or op.type in ("cond", "while_loop"):
            return None
        try:
            self.signature(operands)
        except Mistake as m:
            self.report(op, m.rule, m.key, m.message)
        except (InferenceError, Unsupported, *_RULE_SLIPS):
            pass
        return None

    def verify(self, op, operands):
        ctx = self.ctx
        if id(op) in ctx.faulty_ops:
            return None                # its call is wrong already (an unknown input, one missing)
        variant = op_table.variant(op.type, operands.opset)
        if variant is None:
            return None                # an unknown op, or one its opset lacks: the ops family says
        if op.type in ("cond", "while_loop"):
            return self.control_flow(op, operands)
        try:
            self.signature(operands)
            self.shape_rules(op, operands)
            types = self.infer(op, operands)
        except Mistake as m:
            self.report(op, m.rule, m.key, m.message)
            return m.meant
        except Refused as e:
            rule_key, message = by_coremltools.translate(op, operands, e.detail)
            self.report(op, "coremltools-inference", rule_key, message)
            return None
        except InferenceError as e:
            self.report(op, "operand-shapes", getattr(e, "key", None), f"{op.type}: {e.message}")
            return None
        except Unsupported:
            return None
        if types is None or not all(_well_formed(concrete(t)) for t in types):
            return None                # what a rule made of values of a form it does not expect
        self.compare(op, types)
        return types

    @staticmethod
    def shape_rules(op, operands) -> None:
        """The op's shape rules, which name the input at fault. One that slips on a value of a
        form it does not expect gives way to inference, which says what the form is or that
        the op cannot take it."""
        try:
            for rule in rules_for(op.type):
                rule(Plain(operands))
        except InferenceError:
            raise
        except _RULE_SLIPS:
            pass

    def signature(self, operands) -> None:
        computed = partial(self._is_runtime, scope=operands.scope)
        signature.check(operands, computed, self.ctx.from_print)

    def control_flow(self, op, operands):
        """cond and while_loop: their inputs are checked here, their blocks by the structure
        family; their types, when their blocks agree, go on to the ops after them."""
        try:
            self.signature(operands)
            self.shape_rules(op, operands)
        except Mistake as m:
            self.report(op, m.rule, m.key, m.message)
            return None
        except (InferenceError, Unsupported):
            return None
        if op.type == "cond":
            flow_types.cond_blocks(self.ctx, op, operands)
        elif len(op.blocks) == 2:
            flow_types.loop_blocks(self.ctx, op, operands)
        try:
            return registry.native(op.type)[1](operands)
        except (InferenceError, Unsupported, *_RULE_SLIPS):
            return None

    def infer(self, op, operands):
        found = registry.native(op.type)
        if found is not None:
            try:
                return found[1](operands)
            except Unsupported:
                pass
        types = self.coremltools.types(op, operands)
        within_bounds([concrete(t) for t in types or ()])
        return types

    def compare(self, op, types) -> None:
        if self.ctx.from_print and has_literal(op):
            return                     # a print's literals have guessed dtypes
        for out, inferred in zip(op.outputs, types):
            if out.type is None or out.type == inferred:
                continue
            inferred = concrete(inferred)
            if not compatible(out.type, inferred):
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


_RULE_SLIPS = registry.SLIPS


def where_has(op, key: str) -> bool:
    return key in op.inputs or key in op.attributes


def has_literal(op) -> bool:
    return any(isinstance(b, Value) for bindings in op.inputs.values() for b in bindings)
