"""--expose and --remove-output: a function's outputs, in the program and the model section."""
from __future__ import annotations

from ..text.lexemes import var as spelt
from . import features
from .scope import EditError, definitions, missing


def top_definition(fn_name: str, fn, name: str, edit: str):
    """The Definition of `name` in the top block of `fn`; EditError, saying why, when it is
    only defined inside a nested block (a block's vars exist only while it runs)."""
    defs = definitions(fn).get(name, [])
    for d in defs:
        if d.owner is None:
            return d
    if not defs:
        raise missing(name, {fn_name: definitions(fn)})
    owner = defs[0].owner
    made = f" {spelt(owner.outputs[0].name)}" if owner.outputs else ""
    raise EditError(f"{spelt(name)} is defined inside a block of {owner.type}{made}, and a block's vars "
                    f"exist only while the block runs, so {edit} cannot reach it: only vars of the function's "
                    f"top block can be outputs or inputs" + (f" (the {owner.type}'s own output{made} can)" if made else ""))


def exposable(fn_name: str, fn, name: str):
    """The Definition of `name` when it can become an output of `fn` (its type aside); else
    EditError saying why not (the language server offers --expose by this too)."""
    d = top_definition(fn_name, fn, name, "--expose")
    if d.op is None:
        raise EditError(f"{spelt(name)} is an input of function {fn_name}; an output is a var the function computes")
    if name in fn.block.outputs:
        raise EditError(f"{spelt(name)} is already an output of function {fn_name}")
    return d


def expose(fn_name: str, fn, name: str, descs: list) -> None:
    d = exposable(fn_name, fn, name)
    block = fn.block
    if d.var.type is None:
        raise EditError(f"{spelt(name)} has no type to describe it by (`miltext infer` writes it)")
    block.outputs = [*block.outputs, name]
    features.add_output(descs, d.var)


def remove_output(fn_name: str, fn, name: str, descs: list) -> None:
    block = fn.block
    if name not in block.outputs:
        raise missing(name, {fn_name: block.outputs}, "output")
    if len(block.outputs) == 1:
        raise EditError(f"{spelt(name)} is the only output of function {fn_name}; a function has one at least")
    block.outputs = [o for o in block.outputs if o != name]
    features.remove_output(descs, name)
