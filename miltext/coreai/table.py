"""The table from MIL op to its lowering: each family module under `lowerings/` registers its
functions with `@lowers("op", ...)`. A lowering takes the function's Lowering (see lower.py)
and the MIL op, and binds the op's outputs to Core AI values."""
from __future__ import annotations

from ..op_families import OpTable, family_of

# The MIL opsets whose ops are lowered (their spellings: the iOS15..iOS18 op definitions).
OPSETS = ("CoreML5", "CoreML6", "CoreML7", "CoreML8")

LOWERINGS = OpTable(f"{__package__}.lowerings")


def lowers(*op_types: str):
    def register(fn):
        for t in op_types:
            LOWERINGS[t] = fn
        return fn
    return register


def lowering(op_type: str):
    """The lowering of `op_type`, or None."""
    return LOWERINGS.find(op_type)


def table() -> dict:
    """op type -> family, for --list-ops and the docs."""
    return {t: family_of(fn) for t, fn in sorted(LOWERINGS.full().items())}
