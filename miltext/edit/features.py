"""The model section's side of an edit: the features of the descriptions that describe a
function (the model's own description for the function it is about, and the function's
description in a model of several), renamed, added and removed with the program."""
from __future__ import annotations

from ..ir import StateType
from ..model.derive import DescriptionError, describe
from .scope import EditError

KINDS = ("input", "state", "output", "trainingInput")
PREDICTED = ("predictedFeatureName", "predictedProbabilitiesName")


def descriptions(spec, program, function: str) -> list:
    """The descriptions (ModelDescription or FunctionDescription messages) of `spec` that
    describe `function`; none when the model has no section (it is derived when written)."""
    if spec is None or not spec.HasField("description"):
        return []
    desc = spec.description
    found = [fd for fd in desc.functions if fd.name == function]
    if len(program.functions) == 1:
        about = next(iter(program.functions))
    else:
        about = desc.defaultFunctionName or "main"   # coremltools copies the default one up
    if about == function:
        found.append(desc)
    return found


def rename(descs: list, old: str, new: str) -> None:
    for d in descs:
        for kind in KINDS:
            for feature in getattr(d, kind, ()):
                if feature.name == old:
                    feature.name = new
        for key in PREDICTED:
            if getattr(d, key) == old:
                setattr(d, key, new)


def remove_output(descs: list, name: str) -> None:
    for d in descs:
        kept = [f for f in d.output if f.name != name]
        if len(kept) != len(d.output):
            _replace(d.output, kept)
        for key in PREDICTED:
            if getattr(d, key) == name:
                d.ClearField(key)


def add_output(descs: list, var) -> None:
    """An output feature for `var` (already an output of the program) in each description."""
    for d in descs:
        _describe(d.output.add(name=var.name), var, "output")


def retype_output(descs: list, var) -> None:
    """The output feature named like `var` described anew, for its new type."""
    for d in descs:
        for feature in d.output:
            if feature.name == var.name:
                feature.ClearField("type")
                _describe(feature, var, "output")


def _describe(feature, var, kind: str) -> None:
    try:
        describe(feature, var, kind)
    except DescriptionError as e:
        raise EditError(f"{e.message}; so it cannot be an {kind} of the model") from None


def set_signature(descs: list, inputs: list, outputs: list) -> None:
    """Inputs (and states) and outputs of each description made those of `inputs`, `outputs`
    (Vars): a feature the description had is kept as it is (an image stays an image), a new
    one is described from its var's type; classifier names that name no output go."""
    for d in descs:
        old = {(kind, f.name): f for kind in KINDS for f in getattr(d, kind, ())}
        for kind in ("input", "state", "output"):
            d.ClearField(kind)
        for var, kind in [(v, "state" if isinstance(v.type, StateType) else "input") for v in inputs] + \
                [(v, "output") for v in outputs]:
            feature = getattr(d, kind).add()
            had = old.get((kind, var.name))
            if had is not None:
                feature.CopyFrom(had)
                continue
            feature.name = var.name
            _describe(feature, var, kind)
        for key in PREDICTED:
            if getattr(d, key) and getattr(d, key) not in {v.name for v in outputs}:
                d.ClearField(key)


def _replace(repeated, items: list) -> None:
    copies = [type(f)() for f in items]
    for copy, f in zip(copies, items):
        copy.CopyFrom(f)
    del repeated[:]
    repeated.extend(copies)
