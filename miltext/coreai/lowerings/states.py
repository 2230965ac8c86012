"""States (read_state, write_state, coreml_update_state): the dialect reaches state through
handles (read_handle and write_handle, ordered by tokens); how a graph takes a handle argument
is not yet worked out here, so a stateful function is refused by name."""
from __future__ import annotations

from ..errors import PortError


def state_argument(low, var):
    raise PortError(f"state %{var.name}: states (read_state, write_state) have no Core AI lowering yet "
                    "(the dialect's read_handle/write_handle; see docs/coreai.md)")
