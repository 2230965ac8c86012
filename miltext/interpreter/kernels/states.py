"""States (iOS18): read_state and write_state reach the arrays the caller passes in `states`,
so a KV-cache decoder runs step by step with its states carried from call to call."""
from __future__ import annotations

import numpy as np

from ..errors import RunError
from ..registry import kernel


def _state(a, key="input"):
    ref = a(key)
    name = getattr(ref, "name", None)
    if name is None:
        raise RunError(f"input {key!r} is no state")
    return name


@kernel("read_state")
def read_state(a):
    return np.array(a.evaluator.states[_state(a)])


@kernel("write_state", "coreml_update_state")
def write_state(a):
    name = _state(a, "input" if a.has("input") else "state")
    value = np.asarray(a("data") if a.has("data") else a("value"))
    states = a.evaluator.states
    states[name] = value.astype(np.asarray(states[name]).dtype).reshape(np.asarray(states[name]).shape)
    return value if a.op.outputs else ()
