"""--set-weight VAR=FILE.npy: a const's value taken from a .npy file, its shape and dtype
checked against the const's type (a float file may give a float const of another width, as
`npy(..., from=...)` casts, and so may an integer one an integer const). Only the file's header
is read here, through the bounded readers of miltext.model.weight_refs; writing a package
streams the data into its weight file."""
from __future__ import annotations

import os

from ..ir import StateType, TensorType, Value, WeightRef
from ..model import weight_refs
from ..text.lexemes import var as spelt
from .scope import EditError, definitions, missing


def set_weight(fn_name: str, fn, name: str, path: str) -> None:
    defs = definitions(fn).get(name)
    if not defs:
        raise missing(name, {fn_name: definitions(fn)})
    op = defs[0].op
    if op is None or op.type != "const" or "val" not in op.attributes:
        made = "an input" if op is None else f"made by {op.type}"
        raise EditError(f"{spelt(name)} is {made}, not a const: --set-weight sets a const's value")
    if not path.lower().endswith(".npy"):
        raise EditError(f"{path}: --set-weight reads a .npy file")
    old = op.attributes["val"]
    ref = WeightRef("npy", os.path.abspath(path))
    header = weight_refs.read_header(ref, None)
    t = old.type.wrapped if isinstance(old.type, StateType) else old.type
    if isinstance(t, TensorType) and header.dtype != t.dtype and weight_refs.castable(header.dtype, t.dtype):
        ref = WeightRef("npy", ref.path, source_dtype=header.dtype)
    problem = weight_refs.mismatch(ref, old.type, header)
    if problem is not None:
        raise EditError(f"{problem.replace(ref.path, path)} (the type of const {spelt(name)})")
    op.attributes = {**op.attributes, "val": Value(old.type, ref, old.doc)}   # whole: see ir.compact
