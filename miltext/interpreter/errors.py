"""What running a program can fail with."""
from __future__ import annotations

from ..errors import InputError, ProgramError


class RunError(ProgramError):
    """An op that cannot be run (no kernel, inputs it cannot take) or inputs that do not fit the
    function: located at the op when it has a place."""


# what a kernel (or a replay) may fail with, each said by the evaluator at its op
KERNEL_FAILURES = (RunError, InputError, ValueError, IndexError, TypeError, KeyError, ArithmeticError, MemoryError)
