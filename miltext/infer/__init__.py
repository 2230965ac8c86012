"""Type inference for hand-written MIL: fill in what the text leaves out.

`complete(program)` gives every op its implied name and (for `build`) turns literal arguments
into `const` ops the way coremltools does; `infer(program)` fills every missing output type,
by the native rules of `rules/` (one module per op family) or, for other ops, by coremltools'
own inference when it is installed (`coremltools_rules`, imported only then).
"""
from __future__ import annotations

from .complete import complete, fill_names, materialize_literals
from .engine import InferenceError, infer, walk


def make_explicit(program, *, use_coremltools: bool = True) -> None:
    """The program made explicit, in place: every name, const and output type written in."""
    complete(program)
    infer(program, use_coremltools=use_coremltools)


__all__ = [
    "InferenceError",
    "complete",
    "fill_names",
    "infer",
    "make_explicit",
    "materialize_literals",
    "walk",
]
