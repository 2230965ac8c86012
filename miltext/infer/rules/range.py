"""range_1d: a vector of (end - start) / step numbers, its length a run-time size when the
bounds are (the positions 0 .. length of a sequence keep the length's identity)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import InferenceError
from ..operands import misfit
from ..registry import rule
from ..shapes import tensor
from ..symbols import Sym, derived


@rule("range_1d")
def range_1d(ops):
    start_type = ops.tensor("start")
    start, end, step = (ops.value(key, required=False) for key in ("start", "end", "step"))
    length = None
    if start is not None and end is not None and step is not None \
            and start.size == end.size == step.size == 1:
        start, end, step = (v.reshape(-1)[0] for v in (start, end, step))
        numbers = [not isinstance(v, Sym) for v in (start, end, step)]
        if numbers[2] and step == 0:
            raise InferenceError("range_1d needs a step other than 0")
        for key, v, number in zip(("start", "end", "step"), (start, end, step), numbers):
            if number and not (isinstance(v, (int, float, np.number)) and math.isfinite(v)):
                raise misfit(key, f"{key} must be a finite number, not {v}")
        if all(numbers):
            length = max(0, math.ceil((end - start) / step))
        elif numbers[0] and start == 0 and numbers[2] and step == 1:
            length = end
        else:
            length = derived("range", start, end, step)
    return [tensor(start_type.dtype, (length,))]
