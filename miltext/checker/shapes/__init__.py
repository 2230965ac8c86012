"""What each op needs of its inputs' shapes, with the input at fault named: the rules `check`
applies on top of inference (miltext/infer computes output types; these say which input is
wrong and how). A rule takes the op's Operands and raises Mistake; inputs whose types are not
known make it raise Unsupported (from Operands), and then it says nothing."""
from __future__ import annotations

from ...infer.symbols import Sym, concrete, known
from ...op_families import OpTable

_RULES = OpTable(__name__)      # op type -> [function]


class Mistake(Exception):
    """An input an op cannot take: `key` names it (None: the op as a whole); `rule` is the
    check's name in docs/check.md. With `meant`, checking goes on as if the suggested fix were
    made (a cast to "float16" is taken as one to fp16), so the mistakes after it show too."""

    def __init__(self, key: str | None, message: str, rule: str = "operand-shapes", meant=None):
        super().__init__(message)
        self.key, self.message, self.rule = key, message, rule
        self.meant = meant      # the output types the op has if the fix suggested is made


class Plain:
    """An op's Operands as the shape rules read them: a size inference knows only as a symbol
    (miltext/infer/symbols.py) is unknown here, `None` in a shape and in a list of ints, so the
    rules compare plain ints and their messages say `?`."""

    def __init__(self, operands):
        self._operands = operands

    def __getattr__(self, name):
        return getattr(self._operands, name)

    def types(self, key: str) -> list:
        return [concrete(t) for t in self._operands.types(key)]

    def type(self, key: str):
        return concrete(self._operands.type(key))

    def tensor(self, key: str):
        return concrete(self._operands.tensor(key))

    def ints(self, key: str, **kwargs):
        found = self._operands.ints(key, **kwargs)
        return None if found is None else [d if known(d) else None for d in found]

    def scalar(self, key: str, **kwargs):
        found = self._operands.scalar(key, **kwargs)
        return None if isinstance(found, Sym) else found


def rule(*op_types: str):
    def register(fn):
        for op_type in op_types:
            _RULES.setdefault(op_type, []).append(fn)
        return fn
    return register


def rules_for(op_type: str) -> list:
    return _RULES.find(op_type, ())
