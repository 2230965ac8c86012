"""A port checked by running both sides: the original on miltext's interpreter, the port on
Core AI's runtime, on the same inputs (generated from the input types, or given), compared
output by output."""
from __future__ import annotations

import numpy as np

from ..ir import StateType, TensorType

# Whole-model tolerances (rtol, atol) by the output's dtype, rtol relative to the output's
# largest magnitude: the two runtimes round differently op by op (the interpreter rounds an
# fp16 program after every op), which over a whole model is a share of the scale.
TOLERANCES = {"float16": (1e-2, 1e-3), "bfloat16": (5e-2, 1e-2)}
DEFAULT_TOLERANCE = (1e-4, 1e-5)
MAX_GENERATED = 1 << 24        # elements: a larger generated input is refused before it is made


def generated(fn, given: dict, seed: int = 0) -> tuple[dict, dict]:
    """(inputs, states) of `fn`: the given ones cast to the declared dtypes, the others made
    up (floats in [-1, 1), integers in [0, 4), bools at random; states start at zero)."""
    from ..dtypes import by_name
    rng = np.random.default_rng(seed)
    inputs, states = {}, {}
    for var in fn.inputs:
        t = var.type.wrapped if isinstance(var.type, StateType) else var.type
        if not isinstance(t, TensorType) or not t.is_static:
            continue           # lower() has said why this cannot port
        dt = np.dtype(by_name(t.dtype).numpy)
        if var.name in given:
            value = np.asarray(given[var.name]).astype(dt)
        elif int(np.prod(t.shape)) > MAX_GENERATED:
            from ..errors import InputError
            raise InputError(f"input %{var.name} {t.shape} is too large to make up: give it with -i")
        elif isinstance(var.type, StateType):
            value = np.zeros(t.shape, dt)
        elif dt.kind == "f":
            value = rng.uniform(-1, 1, t.shape).astype(dt)
        elif dt.kind == "b":
            value = rng.integers(0, 2, t.shape).astype(dt)
        else:
            value = rng.integers(0, 4, t.shape).astype(dt)
        (states if isinstance(var.type, StateType) else inputs)[var.name] = value
    return inputs, states


def compared(expected: dict, got: dict, rtol=None, atol=None) -> list:
    """Per output: (name, max abs error, max rel error, within tolerance, note)."""
    rows = []
    for name, want in expected.items():
        have = got.get(name)
        want = np.asarray(want)
        if have is None:
            rows.append((name, None, None, False, "missing from the port's outputs"))
            continue
        have = np.asarray(have)
        if have.shape != want.shape:
            rows.append((name, None, None, False, f"shape {have.shape}, expected {want.shape}"))
            continue
        r, a = TOLERANCES.get(str(want.dtype), DEFAULT_TOLERANCE)
        r, a = rtol if rtol is not None else r, atol if atol is not None else a
        w, h = want.astype(np.float64), have.astype(np.float64)
        diff = np.abs(w - h)
        both_nan = np.isnan(w) & np.isnan(h)
        diff = np.where(both_nan | (w == h), 0.0, diff)          # equal infs and NaNs agree
        worst = float(diff.max()) if diff.size else 0.0
        big = np.abs(w) > a        # relative error where the value is not next to zero
        rel = float((diff[big] / np.abs(w[big])).max()) if big.any() else 0.0
        finite = np.abs(w[np.isfinite(w)])
        scale = float(finite.max()) if finite.size else 0.0
        ok = worst <= a + r * scale
        rows.append((name, worst, rel, ok, ""))
    return rows
