"""Weights by reference (`npy(...)`, `safetensors(...)`): the file is there, the tensor is in it,
and its shape and dtype fit the declared type (with `from=` for a cast). Only the files' headers
are read. Paths are relative to the folder of the checked file (the working folder without one)."""
from __future__ import annotations

from ..model import weight_refs

RULES = {"weight-ref": "error"}


def check(ctx) -> None:
    refs = weight_refs.references(ctx.program)
    if not refs:
        return
    folder = getattr(ctx, "folder", None)
    for value, loc in refs:
        try:
            weight_refs.check(value.data, value.type, folder)
        except weight_refs.WeightRefError as e:
            ctx.error("weight-ref", e.loc or loc, e.message)
