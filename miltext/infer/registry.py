"""Which native rule infers which op: each module of `rules/` registers its functions with
`@rule("op", ...)`; a rule takes the op's Operands and returns its output types."""
from __future__ import annotations

import functools

from ..op_families import OpTable, family_of
from .errors import InferenceError
from .shapes import within_bounds

_RULES = OpTable(f"{__package__}.rules")     # op type -> (family, function); a module per family


# What a rule raises when an input is of a form it does not expect (a list for an axis, a
# string for a size, a stride list too short): the op's inputs are at fault, not the rule.
SLIPS = (TypeError, ValueError, IndexError, KeyError, ZeroDivisionError, OverflowError, AttributeError)


def rule(*op_types: str):
    def register(fn):
        family = family_of(fn)

        @functools.wraps(fn)
        def guarded(ops):
            try:
                types = fn(ops)
            except InferenceError:
                raise
            except SLIPS:
                raise InferenceError(f"its inputs are not of the form {ops.op.type} takes (an input "
                                     "of the wrong kind, length or rank)") from None
            within_bounds(types)
            return types
        for op_type in op_types:
            _RULES[op_type] = (family, guarded)
        return fn
    return register


def native(op_type: str):
    """(family, rule) for `op_type`, or None when no native rule covers it."""
    return _RULES.find(op_type)


def covered() -> dict:
    """Op type -> family, for every op a native rule covers."""
    return {op_type: family for op_type, (family, _) in _RULES.full().items()}
