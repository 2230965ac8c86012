"""Why an op's output types could not be inferred."""
from __future__ import annotations

from ..errors import ProgramError


class InferenceError(ProgramError):
    """An op whose output types neither the native rules nor coremltools can infer, or whose
    inputs contradict each other; `.loc` is the op's place in the text."""


class Unsupported(Exception):
    """Raised by a native rule for a case it does not cover: the op goes to coremltools."""


class Refused(InferenceError):
    """coremltools' inference refused the op's inputs (not: miltext could not hand them over);
    `.detail` is coremltools' own message, for reading, never for showing a user as it is."""

    def __init__(self, message: str, loc: tuple | None = None, detail: str = ""):
        super().__init__(message, loc)
        self.detail = detail
