"""A program prepared once and run many times: `miltext.Session`.

    with miltext.Session(model.program, weights=model.folder) as session:
        for batch in batches:
            outputs = session.run({"x": batch})

The first run of a function works out its plan (each op's kernel and bindings, the values to
let go after their last use); literals and weights are decoded on first use and kept, weight
files memory-mapped where the bytes are the array. Later runs only compute. `miltext.run` and
`miltext run` are one run of a Session; `--trace` and `compare` watch one through `observer`.

A Session runs the program as it was at its first run, with the weights as they were when first
read: after editing either, make a new Session. One Session runs one call at a time (a thread
each needs its own).
"""
from __future__ import annotations


class Session:
    def __init__(self, program, weights: str | None = None, confine_refs: bool = False):
        """`weights`: the folder blob references are relative to (`@model_path`);
        `confine_refs` refuses weight references that lead out of it."""
        from .evaluator import Evaluator
        self.program = program
        self._evaluator = Evaluator(program, weights, confine_refs=confine_refs)

    def run(self, inputs: dict, function: str = "main", states: dict | None = None,
            timeout: float | None = None, max_memory: int | None = None, observer=None,
            threads: int | None = None) -> dict:
        """The outputs of `function` (name -> numpy array) for `inputs` (name -> array);
        `states` (name -> array) are a stateful model's, updated in place by write_state. The
        run stops with a RunError after `timeout` seconds and before any tensor that would take
        it past `max_memory` bytes (None: the defaults of limits.py). It uses at most `threads`
        threads (None: as many as NumPy's BLAS was given, OPENBLAS_NUM_THREADS or the cores, and
        one while the machine is busy; a number is used as given, busy or not).

        `observer(function, path, op, values)` is called after each op with the values it gave
        (var name -> value): `path` is () in the function's block, and inside a nested block
        the op that owns each enclosing block as (its first output's name, block index, pass),
        outermost first, so a while_loop's passes are told apart. A const that only ops of its
        own block read is no step of its own (its readers take the value directly): the
        observer is not called for it."""
        from .limits import Limits
        return self._evaluator.run(function, inputs, states, Limits(timeout, max_memory, threads), observer)

    def const_value(self, op):
        """The value of a const op, as runs read it (a run binds most consts straight to the
        ops that read them, so an observer does not see them: numerics asks for them here)."""
        val = op.inputs.get("val", [op.attributes.get("val")])[0]
        return self._evaluator.value(val)

    def close(self) -> None:
        """Let go of the kept values and the weight files' maps."""
        self._evaluator.close_files()
        self._evaluator._plans.clear()
        self._evaluator._chains.clear()
        self._evaluator._maps.clear()       # a map closes once no array views it

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
