"""State ops: reading a state gives the type it wraps."""
from __future__ import annotations

from ...ir import StateType
from ..errors import InferenceError
from ..registry import rule


@rule("read_state")
def read_state(ops):
    t = ops.type("input")
    if not isinstance(t, StateType):
        raise InferenceError("`input` is not a state")
    return [t.wrapped]


@rule("coreml_update_state")
def coreml_update_state(ops):
    return [ops.type("value")]
