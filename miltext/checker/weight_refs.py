"""Weights by reference (`npy(...)`, `safetensors(...)`): the file is there, the tensor is in it,
and its shape and dtype fit the declared type (with `from=` for a cast). Only the files' headers
are read. Paths are relative to the folder of the checked file (the working folder without one)."""
from __future__ import annotations

from ..model import weight_refs

RULES = {"weight-ref": "error"}


def check(ctx) -> None:
    text = ctx.where.text
    if text is not None and "npy(" not in text and "safetensors(" not in text:
        return      # a reference is written npy(...) or safetensors(...): the text has none
    refs = weight_refs.references(ctx.program)
    if not refs:
        return
    folder = getattr(ctx, "folder", None)
    for value, loc in refs:
        try:
            weight_refs.check(value.data, value.type, folder)
        except weight_refs.WeightRefError as e:
            ctx.error("weight-ref", e.loc or loc, e.message)
