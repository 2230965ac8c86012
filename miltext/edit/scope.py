"""Where a function defines and uses its vars, for the edits.

A name may be defined more than once in a function (each block of a while_loop names its loop
vars alike), always in blocks that cannot see each other or shadowing an outer one; so renaming
every occurrence of a name in a function, definitions and uses, keeps what each use refers to,
as long as the new name occurs nowhere in it."""
from __future__ import annotations

from dataclasses import dataclass

from ..checker.suggest import did_you_mean
from ..errors import InputError
from ..ir.walk import blocks, operations
from ..text.lexemes import var as spelt


class EditError(InputError):
    """An edit that cannot be made to this model, said in plain words."""


@dataclass
class Definition:
    """Where a var is defined: a function input (op None), an op's output, or a block input
    (op None, owner set); `owner` is the op whose block holds it, None in the top block."""
    var: object
    op: object = None
    owner: object = None


def definitions(fn) -> dict:
    """Name -> the Definitions of that name in function `fn`, in program order."""
    found = {v.name: [Definition(v)] for v in fn.inputs}
    stack = [(block, None) for block in fn.blocks.values()]
    while stack:
        block, owner = stack.pop()
        for v in block.inputs:
            found.setdefault(v.name, []).append(Definition(v, None, owner))
        for op in block.operations:
            for v in op.outputs:
                found.setdefault(v.name, []).append(Definition(v, op, owner))
            stack.extend((inner, op) for inner in op.blocks)
    return found


def names(fn) -> set:
    """Every name defined in `fn`."""
    return set(definitions(fn))


def missing(name: str, fn_names: dict, what: str = "var") -> EditError:
    """No `what` `name` in the functions searched (function -> the names to suggest from)."""
    known = set().union(*fn_names.values()) if fn_names else set()
    where = ", ".join(fn_names) or "the program"
    return EditError(f"no {what} {spelt(name)} in function {where}{did_you_mean(name, known, spell=spelt)}")


def uses(op) -> set:
    """The names op reads: its own inputs and, in its blocks, names defined outside them."""
    read = {b for bindings in op.inputs.values() for b in bindings if isinstance(b, str)}
    if op.blocks:
        inner_defs, inner_reads = set(), set()
        for block in blocks(op):
            inner_defs.update(v.name for v in block.inputs)
            inner_reads.update(block.outputs)
        for inner in operations(op):
            inner_defs.update(v.name for v in inner.outputs)
            inner_reads.update(b for bindings in inner.inputs.values() for b in bindings if isinstance(b, str))
        read |= inner_reads - inner_defs
    return read


def rename(fn, old: str, new: str) -> None:
    """Every occurrence of `old` in `fn` becomes `new` (see the module's note on scopes)."""
    for v in fn.inputs:
        if v.name == old:
            v.name = new
    for block in blocks(fn):
        for v in block.inputs:
            if v.name == old:
                v.name = new
        if old in block.outputs:
            block.outputs = [new if o == old else o for o in block.outputs]
        for op in block.operations:
            for v in op.outputs:
                if v.name == old:
                    v.name = new
            if any(old in bindings for bindings in op.inputs.values()):
                # assigned whole: a compact op's dicts are read-only (miltext.ir.compact)
                op.inputs = {key: [new if b == old else b for b in bindings] for key, bindings in op.inputs.items()}
