"""What goes wrong in a port, said for the user."""
from __future__ import annotations


class PortError(Exception):
    """An op, type or value miltext cannot carry to Core AI; `op` is the MIL op at fault."""

    def __init__(self, message: str, op=None):
        super().__init__(message)
        self.message, self.op = message, op
