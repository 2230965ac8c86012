"""Why an op's output types could not be inferred."""
from __future__ import annotations

from ..errors import ProgramError


class InferenceError(ProgramError):
    """An op whose output types neither the native rules nor coremltools can infer, or whose
    inputs contradict each other; `.loc` is the op's place in the text."""


class Unsupported(Exception):
    """Raised by a native rule for a case it does not cover: the op goes to coremltools."""
