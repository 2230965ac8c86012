"""Weights by reference (`npy(...)`, `safetensors(...)`): the file is there, the tensor is in it,
and its shape and dtype fit the declared type (with `from=` for a cast). Only the files' headers
are read, each file's once. Paths are relative to the folder of the checked file (the working
folder without one); with `confine_refs`, a path that leads out of it is an error."""
from __future__ import annotations

from ..model import weight_refs
from ..model.weight_headers import Headers

RULES = {"weight-ref": "error"}


def check(ctx) -> None:
    text = ctx.where.text
    if text is not None and "npy(" not in text and "safetensors(" not in text:
        return      # a reference is written npy(...) or safetensors(...): the text has none
    refs = weight_refs.references(ctx.program)
    if not refs:
        return
    folder, confine = getattr(ctx, "folder", None), getattr(ctx, "confine_refs", False)
    headers = getattr(ctx, "ref_headers", None) or Headers()
    for value, loc in refs:
        try:
            weight_refs.check(value.data, value.type, folder, confine, headers)
        except weight_refs.WeightRefError as e:
            ctx.error("weight-ref", e.loc or loc, e.message)
