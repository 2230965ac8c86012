"""Edits of a model, made to its program and its model section together, nested blocks included
(`miltext edit`, docs/inspect.md):

    from miltext import edit
    from miltext.model import read_model, write_model
    model = read_model("Model.mlpackage")
    edit.apply(model, [edit.parse("rename-input", "x=image"), edit.parse("expose", "hidden_3")])
    write_model(model, "Edited.mlpackage")

Every edit names vars as the model names them before any edit, so the order they are given in
does not matter; edits that cannot go together are refused before any is made (EditError).
An edit is made in every function that defines the var it names (or only in `function`).
`apply` changes the model in place; after an EditError it is part-edited (read it again).
"""
from __future__ import annotations

from ..errors import InputError, ProgramError
from ..text.lexemes import var as spelt
from .edits import FORMS, RENAMES, Edit, conflicts, parse
from .scope import EditError, definitions, missing

# the order edits are made in: cut the model down, change ops, then outputs, then names
PHASES = ("extract", "replace-op", "set-weight", "expose", "remove-output", *RENAMES)


def apply(model, edits: list, function: str | None = None) -> None:
    """Make `edits` (Edit objects, see parse) to `model` (a miltext.model.Model), in place."""
    conflicts(edits)
    program, spec = model.program, model.spec
    functions = _functions(program, function)
    replaced = []
    for edit in sorted(edits, key=lambda e: PHASES.index(e.kind)):
        try:
            for name, fn in _targets(edit, functions, edits):
                replaced += _make(edit, name, fn, program, spec)
        except (EditError, InputError) as e:
            raise EditError(f"{edit.flag}: {e}") from None
    if replaced:
        _infer(replaced, program, spec)
    model.text = model.section = None   # the text it was read from no longer says it


def _functions(program, function: str | None) -> dict:
    if function is None:
        return dict(program.functions)
    if function not in program.functions:
        from ..checker.suggest import did_you_mean
        raise EditError(f"no function {function!r} in the program{did_you_mean(function, program.functions)}")
    return {function: program.functions[function]}


def _targets(edit: Edit, functions: dict, edits: list) -> list:
    """(name, function) of each function the edit is made in: those that define its vars."""
    wanted = edit.arg[0] + edit.arg[1] if edit.kind == "extract" else (edit.name,)
    found = {name: definitions(fn) for name, fn in functions.items()}
    chosen = [(name, functions[name]) for name, defs in found.items() if all(w in defs for w in wanted)]
    if chosen:
        return chosen
    absent = next(w for w in wanted if not any(w in defs for defs in found.values()))
    error = missing(absent, found)
    if edit.kind != "extract" and any(e.kind == "extract" for e in edits):
        error = EditError(f"{error}, or --extract leaves it out")
    raise error


def _make(edit: Edit, fn_name: str, fn, program, spec) -> list:
    """Make one edit in one function; the ops whose outputs need their types inferred."""
    from . import features
    descs = features.descriptions(spec, program, fn_name)
    if edit.kind in RENAMES:
        from .names import rename
        rename(edit.kind, fn_name, fn, edit.name, edit.arg, descs)
    elif edit.kind == "expose":
        from .outputs import expose
        expose(fn_name, fn, edit.name, descs)
    elif edit.kind == "remove-output":
        from .outputs import remove_output
        remove_output(fn_name, fn, edit.name, descs)
    elif edit.kind == "extract":
        from .extract import extract
        extract(fn_name, fn, *edit.arg, descs)
    elif edit.kind == "set-weight":
        from .weights import set_weight
        set_weight(fn_name, fn, edit.name, edit.arg)
    elif edit.kind == "replace-op":
        from .ops import replace_op
        return [(replace_op(fn_name, fn, edit.name, edit.arg), fn_name, descs)]
    return []


def _infer(replaced: list, program, spec) -> None:
    """The output types of replaced ops, inferred; an output of the model described anew."""
    from ..infer import infer
    from . import features
    try:
        infer(program)
    except ProgramError as e:
        ops = ", ".join(f"{op.type} {spelt(op.outputs[0].name)}" for op, _, _ in replaced if op.outputs)
        raise EditError(f"--replace-op: the new op's output types cannot be worked out ({ops}): {e.message}") from None
    for op, fn_name, descs in replaced:
        for v in op.outputs:
            if v.name in program.functions[fn_name].block.outputs:
                features.retype_output(descs, v)


__all__ = ["Edit", "EditError", "FORMS", "apply", "conflicts", "parse"]
