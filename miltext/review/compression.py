"""Weights whose representation changed between two models (`miltext diff --weights`, and the
git driver): dense fp16 became a 4-bit palette, int8 became int4, ... Each is named with its
old and new form, bits per parameter, and how far its decompressed values are from the other
side's (decompressed by the interpreter's kernels, as `miltext run` computes them).

Two weights are the same weight when the same op reads them as the same input: an op is known
by its `name` (which converters keep when they compress a model), else by its first output."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class FormChange:
    name: str             # the weight's var in the new model
    old_name: str
    shape: tuple
    old_form: str
    new_form: str
    old_bits: float | None
    new_bits: float | None
    max_abs: float | None = None     # of new - old, over elements finite on both sides
    rms: float | None = None
    relative: float | None = None    # rms of the difference / rms of the old values

    def text(self) -> str:
        shape = "(" + ", ".join(map(str, self.shape)) + ")"
        renamed = f" (was %{self.old_name})" if self.old_name != self.name else ""
        line = (f"# weight %{self.name}{renamed} {shape}: {self.old_form}, {_bits(self.old_bits)} bits "
                f"→ {self.new_form}, {_bits(self.new_bits)} bits")
        if self.max_abs is None:
            return line + "; values not compared (not both readable, or of other shapes)"
        return (line + f"; reconstruction error max {self.max_abs:.4g}, rms {self.rms:.4g}"
                + ("" if self.relative is None else f" ({100 * self.relative:.2f}% of the old rms)"))


def form_changes(old_model, new_model, limits=None) -> list:
    """A FormChange per weight read by the same op input on both sides whose storage differs,
    in the new program's order."""
    from ..interpreter.constants import Constants
    from ..stats.collect import collect
    old_weights, new_weights = collect(old_model.program).weights, collect(new_model.program).weights
    old_by_use = _by_use(old_model.program, old_weights)
    pairs, seen = [], set()
    for key, new in _by_use(new_model.program, new_weights).items():
        old = old_by_use.get(key)
        if old is None or id(new) in seen or _storage(old) == _storage(new):
            continue
        seen.add(id(new))
        pairs.append((old, new))
    found = []
    with Constants(old_model.program, old_model.folder, limits) as old_values, \
            Constants(new_model.program, new_model.folder, limits) as new_values:
        for old, new in pairs:
            change = FormChange(new.name, old.name, new.shape, old.form, new.form,
                                old.bits_per_weight, new.bits_per_weight)
            _measure(change, old_values, old, new_values, new)
            found.append(change)
    return found


def report(old_model, new_model) -> str:
    return "".join(change.text() + "\n" for change in form_changes(old_model, new_model))


def _storage(weight) -> tuple:
    return weight.form, tuple((p.role, p.dtype, tuple(p.shape)) for p in weight.parts)


def _by_use(program, weights) -> dict:
    """(function, reading op, input) -> the weight it reads, for every weight."""
    from ..ir.walk import operations
    from ..stats.schemes import COMPRESSIONS
    by_name = {(w.function, w.name): w for w in weights}
    found = {}
    for fname, fn in program.functions.items():
        for op in operations(fn):
            if op.type in COMPRESSIONS or op.type == "const":
                continue
            reader = op.name or (op.outputs[0].name if op.outputs else None)
            for key, bindings in op.inputs.items():
                for index, binding in enumerate(bindings):
                    weight = by_name.get((fname, binding)) if isinstance(binding, str) else None
                    if weight is not None:
                        found.setdefault((fname, reader, key, index), weight)
    return found


def _measure(change: FormChange, old_values, old, new_values, new) -> None:
    import numpy as np

    from ..errors import InputError, ProgramError
    try:
        a = np.asarray(old_values.dense(old.ops, old.name, old.function), np.float64)
        b = np.asarray(new_values.dense(new.ops, new.name, new.function), np.float64)
    except (InputError, ProgramError, OSError):
        return
    if a.shape != b.shape:
        return
    ok = np.isfinite(a) & np.isfinite(b)
    delta = (b - a)[ok]
    change.max_abs = float(np.abs(delta).max()) if delta.size else 0.0
    change.rms = float(np.sqrt(np.mean(delta * delta))) if delta.size else 0.0
    scale = float(np.sqrt(np.mean(a[ok] * a[ok]))) if delta.size else 0.0
    change.relative = change.rms / scale if scale else None


def _bits(bits) -> str:
    return "?" if bits is None else f"{bits:.2f}"
