"""The native fast paths, and the switch that turns them off.

Two optional C extensions do the whole-program conversions without Python-level work per
field: miltext.text.mil.fastprint (serialized Program -> canonical text) and
miltext.ir.fastencode (object model -> serialized Program); a third gives the interpreter fp32
kernels (miltext.interpreter.fast_kernels). pip builds them when a C compiler is there. Each
gives up on anything it does not do as the Python code does, which then runs instead. With
MILTEXT_PURE_PYTHON=1 in the environment, none is used.
"""
from __future__ import annotations

import os

ENVIRONMENT_SWITCH = "MILTEXT_PURE_PYTHON"


def pure_python() -> bool:
    """Whether the environment turns the native fast paths off (checked on every call)."""
    return os.environ.get(ENVIRONMENT_SWITCH) == "1"
