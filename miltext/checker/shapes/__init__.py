"""What each op needs of its inputs' shapes, with the input at fault named: the rules `check`
applies on top of inference (miltext/infer computes output types; these say which input is
wrong and how). A rule takes the op's Operands and raises Mistake; inputs whose types are not
known make it raise Unsupported (from Operands), and then it says nothing."""
from __future__ import annotations

import importlib
import pkgutil

_RULES: dict = {}      # op type -> [function]
_loaded = False


class Mistake(Exception):
    """An input an op cannot take: `key` names it (None: the op as a whole); `rule` is the
    check's name in docs/check.md. With `meant`, checking goes on as if the suggested fix were
    made (a cast to "float16" is taken as one to fp16), so the mistakes after it show too."""

    def __init__(self, key: str | None, message: str, rule: str = "operand-shapes", meant=None):
        super().__init__(message)
        self.key, self.message, self.rule = key, message, rule
        self.meant = meant      # the output types the op has if the fix suggested is made


def rule(*op_types: str):
    def register(fn):
        for op_type in op_types:
            _RULES.setdefault(op_type, []).append(fn)
        return fn
    return register


def rules_for(op_type: str) -> list:
    global _loaded
    if not _loaded:
        for info in pkgutil.iter_modules(__path__):
            importlib.import_module(f"{__name__}.{info.name}")
        _loaded = True
    return _RULES.get(op_type, ())
