"""The dense value of a weight: its const, or the constexpr ops that decompress it, computed by
the interpreter's kernels (the same ones `miltext run` uses), one weight at a time, within the
run's memory bound."""
from __future__ import annotations

from .evaluator import Evaluator
from .limits import Limits


class Constants:
    """Evaluates const and constexpr_* ops of one program, reading blobs from `folder`."""

    def __init__(self, program, folder: str | None, limits: Limits | None = None):
        self._evaluator = Evaluator(program, folder, limits, mapped=False)
        self._opsets = {name: fn.opset for name, fn in program.functions.items()}

    def dense(self, ops: list, name: str, function: str):
        """The value of var `name`, given out by the last of `ops` (a const, or constexpr ops
        and the consts they read, in program order)."""
        env = {}
        for op in ops:
            self._evaluator.op(op, env, self._opsets.get(function, ""))
        return env[name]

    def close(self) -> None:
        self._evaluator.close_files()           # the weight files the kernels opened

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
