"""Running a MIL program on NumPy: the reference interpreter behind `miltext run`.

    outputs = miltext.run(program, {"x": np.ones((1, 8), np.float32)})

A Session (`session.py`) prepares a program once and runs it many times; its evaluator
(`evaluator.py`) walks a function's block in order, keeping each var's value; each
op is computed by a kernel, one small function per op, found by name in `registry.py` and
grouped by family in `kernels/`. Kernels follow the op definitions of coremltools (the same
defaults, axis conventions and modes); an op with no kernel is a RunError naming it and its
place, never a wrong answer. docs/run.md lists the ops and the dtype rules.
"""
from __future__ import annotations

from .errors import RunError
from .session import Session


def run(program, inputs: dict, function: str = "main", states: dict | None = None,
        weights: str | None = None, timeout: float | None = None, max_memory: int | None = None,
        confine_refs: bool = False, threads: int | None = None) -> dict:
    """The outputs of `function` of `program` (name -> numpy array) for `inputs` (name -> array);
    `states` (name -> array) are a stateful model's states, updated in place by write_state;
    `weights` is the folder blob references are relative to (`@model_path`). The run stops
    with a RunError after `timeout` seconds and before any tensor that would take it past
    `max_memory` bytes (None: the defaults of limits.py). `confine_refs` refuses weight
    references that lead out of `weights`; `threads` is at most how many threads the run
    uses (see Session.run). One run of a Session: a Session runs the program
    again without preparing it again."""
    return Session(program, weights, confine_refs).run(inputs, function, states, timeout, max_memory,
                                                        threads=threads)


__all__ = ["run", "Session", "RunError"]
