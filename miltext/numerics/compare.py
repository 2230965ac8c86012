"""Two runs of one computation compared op by op, to find where their numbers part.

Model A runs with an observer; each value it gives is measured against its reference: model B's
value of the var `miltext diff`'s structural alignment pairs with it (B ran first, its values
written to a temporary trace), or the value of the same key in a file (--against). The first
divergence is the first op, in A's order, whose output leaves tolerance while every input it
reads stayed within it (an input with no reference counts as within): consts and constexpr_*
ops count, so a changed weight is where the values first differ.
"""
from __future__ import annotations

import re

from ..errors import InputError
from .tolerances import comparable, measure, summary
from .trace import Selection, is_array, key_of, observer, reads, with_consts


class Side:
    """A model to compare: its program's function, its canonical lines, where each var is."""

    def __init__(self, path: str, function: str):
        from ..ir.walk import operations
        from ..model.io import read_model
        from ..model.text import model_text
        from ..review.lines import split_lines
        self.path = path
        self.model = read_model(path)
        self.fn = self.model.program.functions.get(function)
        if self.fn is None:
            raise InputError(f"{path}: the program has no function {function!r} "
                             f"(it has {', '.join(sorted(self.model.program.functions)) or 'none'})")
        self.function = function
        self.lines = split_lines(model_text(self.model))
        self.span = _function_span(self.lines, function)
        self.ops = {var.name: op for op in operations(self.fn) for var in op.outputs}
        self._line_of = {name: i for i in self.span for name in self.lines[i].defs if self.lines[i].op}
        self._source = self.model.text.split("\n") if self.model.text is not None else None

    def place(self, var: str) -> dict:
        """The var's op: its name, type, and line, in A's file when that is text, else in the
        text `miltext print` shows of it (the file named then says so)."""
        op = self.ops.get(var)
        found = {"var": var, "op": None, "type": None, "line": None, "file": self.path, "text": None}
        if op is None:
            return found
        found.update(op=op.name, type=op.type)
        if self._source is not None and op.loc is not None and 0 < op.loc[0] <= len(self._source):
            found.update(line=op.loc[0], text=self._source[op.loc[0] - 1].strip())
        elif var in self._line_of:
            i = self._line_of[var]
            found.update(line=i + 1, text=self.lines[i].text.strip(), file=f"`miltext print {self.path}`")
        return found

    def op_place(self, index: int) -> dict:
        line = self.lines[index]
        return self.place(line.defs[0]) if line.defs else \
            {"var": None, "op": line.name, "type": line.op, "line": index + 1, "file": self.path,
             "text": line.text.strip()}


def _function_span(lines: list, function: str) -> range:
    """The indexes of the lines of `function`'s text: from its header to the next function's."""
    heads = [i for i, line in enumerate(lines) if line.op is None and line.text[:1] not in ("", " ", "#")
             and line.text.rstrip().endswith("{") and not line.text.startswith("model(")]
    for k, i in enumerate(heads):
        name = re.match(r'"[^"]*"|[^\s\[(]+', lines[i].text).group(0).strip('"')
        if name == function:
            return range(i, heads[k + 1] if k + 1 < len(heads) else len(lines))
    return range(0)


class Pairing:
    """A's vars paired with B's by the structural alignment, B's ops that A lacks and A's that
    B lacks, and the pairs known equal without a run (consts whose lines and blobs are the same)."""

    def __init__(self, a: Side, b: Side):
        from ..review.align import ADDED, REMOVED, SAME, align
        from ..review.weights import BlobDigests
        digests = BlobDigests(a.model.folder, a.path), BlobDigests(b.model.folder, b.path)
        try:
            alignment = align(a.lines, b.lines, *digests)
        finally:
            for d in digests:
                d.close()
        self.partner, self.equal, self.only_a, self.only_b = {}, set(), [], []
        for step in alignment.steps:
            in_a = step.a is not None and step.a in a.span and a.lines[step.a].op is not None
            in_b = step.b is not None and step.b in b.span and b.lines[step.b].op is not None
            if in_a and in_b:
                line_a, line_b = a.lines[step.a], b.lines[step.b]
                for x, y in zip(line_a.defs, line_b.defs):
                    self.partner[x] = y
                    if step.tag == SAME and (line_a.op == "const" or line_a.op.startswith("constexpr_")):
                        self.equal.add(x)
            elif in_a and step.tag == REMOVED:
                self.only_a.append(a.op_place(step.a))
            elif in_b and step.tag == ADDED:
                self.only_b.append(b.op_place(step.b))


class Comparison:
    """The measures of one comparison, made as A runs."""

    def __init__(self, a: Side, reference, rtol=None, atol=None):
        self.a, self.reference, self.rtol, self.atol = a, reference, rtol, atol
        self.outside: dict = {}      # var -> whether its latest value left tolerance
        self.pairs: dict = {}        # A's var -> its pair's record, worst pass kept
        self.incomparable: list = []
        self.first = None

    def observe(self, function, path, op, values) -> None:
        diverged = None
        for name, value in values.items():
            if not is_array(value):
                continue
            key = key_of(name, path)
            if name in self.reference.equal:
                self.outside[name] = False
                continue
            ref_key = self.reference.key(name, key)
            if ref_key is None:
                continue
            ref = self.reference.get(ref_key)
            why = comparable(value, ref)
            if why is not None:
                self.incomparable.append({"a": self.a.place(name), "b": self.reference.place(ref_key), "why": why})
                continue
            m = measure(value, ref, self.rtol, self.atol)
            self._keep(name, ref_key, m)
            self.outside[name] = not m.within
            if not m.within and diverged is None:
                diverged = (name, key, ref_key, value, ref, m)
        if diverged is not None and self.first is None and not any(self.outside.get(n) for n in reads(op)):
            self.first = self._divergence(*diverged)

    def _keep(self, name: str, ref_key: str, m) -> None:
        kept = self.pairs.get(name)
        if kept is None:
            self.pairs[name] = kept = {"a": self.a.place(name), "b": self.reference.place(ref_key),
                                       "max_abs": 0.0, "max_rel": 0.0, "outside": 0, "size": m.size,
                                       "rtol": m.rtol, "atol": m.atol, "passes": 0}
        kept["passes"] += 1
        kept["outside"] += m.outside
        kept["max_abs"] = max(kept["max_abs"], m.max_abs)
        kept["max_rel"] = max(kept["max_rel"], m.max_rel)

    def _divergence(self, name, key, ref_key, value, ref, m) -> dict:
        ours, theirs = summary(value), summary(ref)
        return {"a": self.a.place(name), "b": self.reference.place(ref_key), "key": key,
                "max_abs": m.max_abs, "max_rel": m.max_rel, "outside": m.outside, "size": m.size,
                "rtol": m.rtol, "atol": m.atol,
                "nonfinite": {"a": {k: ours[k] for k in ("nan", "inf")}, "b": {k: theirs[k] for k in ("nan", "inf")}},
                "range": {"a": ours["range"], "b": theirs["range"]}}


class ModelReference:
    """B's values, from a trace of its run, under the names the pairing gives A's vars."""

    def __init__(self, b: Side, pairing: Pairing, values):
        self.b, self.pairing, self.values = b, pairing, values
        self.equal = pairing.equal

    def key(self, name: str, key: str) -> str | None:
        partner = self.pairing.partner.get(name)
        if partner is None:
            return None
        found = partner + key[len(name):]
        return found if found in self.values else None

    def get(self, key: str):
        return self.values.get(key)

    def place(self, key: str) -> dict:
        return self.b.place(key.split("#", 1)[0])


class FileReference:
    """Values captured elsewhere (Core ML on a Mac, torch hooks), keyed by A's var names."""
    equal = frozenset()

    def __init__(self, values):
        self.values = values

    def key(self, name: str, key: str) -> str | None:
        return key if key in self.values else None

    def get(self, key: str):
        import numpy as np
        array = self.values.get(key)
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise InputError(f"{self.values.path}: {key} holds NaN or infinite values; a reference "
                             "must be finite (compare two models to see where NaN or inf comes from)")
        return array

    def place(self, key: str) -> dict:
        return {"var": key, "op": None, "type": None, "line": None, "file": self.values.path, "text": None}


def compare_models(a: Side, b: Side, inputs: dict, rtol=None, atol=None, **run_options) -> dict:
    """The report (see report.py) of A and B run on `inputs` (by A's input names)."""
    import shutil
    import tempfile

    from ..interpreter import Session
    from .trace import FolderWriter
    from .values import Values
    pairing = Pairing(a, b)
    wanted = {pairing.partner[n] for n in pairing.partner if n not in pairing.equal}
    folder = tempfile.mkdtemp(prefix="miltext-compare-")
    try:
        writer = FolderWriter(folder)
        with Session(b.model.program, b.model.folder, run_options.pop("confine_refs", False)) as session:
            keep = observer(lambda k, v, op: writer.add(k, v), Selection(names=wanted))
            outputs_b = session.run(_inputs_for(b, a, inputs), b.function,
                                    observer=with_consts(session, b.function, keep), **run_options)
        writer.close()
        from ..interpreter.limits import Limits
        values = Values(folder, Limits())
        try:
            report = _compare(a, ModelReference(b, pairing, values), inputs, rtol, atol, run_options)
        finally:
            values.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    outputs_a = report.pop("_outputs")
    report["outputs"] = {}
    for name_a, name_b in zip(a.fn.block.outputs, b.fn.block.outputs):
        report["outputs"][name_a] = _output(outputs_a[name_a], outputs_b[name_b], name_b, rtol, atol)
    report["only_a"], report["only_b"] = pairing.only_a, pairing.only_b
    return _finish(report)


def compare_against(a: Side, values, inputs: dict, rtol=None, atol=None, **run_options) -> dict:
    """The report of A run on `inputs` against `values` (a values.Values), keyed by A's vars."""
    names = {var.name for var in a.fn.inputs} | set(a.ops)
    if not any(k.split("#", 1)[0] in names for k in values.keys()):
        shown = ", ".join(sorted(values.keys())[:5]) + (", ..." if len(values.keys()) > 5 else "")
        raise InputError(f"{values.path}: none of its arrays ({shown or 'none'}) is named after a var of "
                         f"{a.path}'s {a.function}; key them by its var names (`miltext print {a.path}` shows them)")
    report = _compare(a, FileReference(values), inputs, rtol, atol, run_options)
    outputs_a = report.pop("_outputs")
    report["outputs"] = {name: _output(outputs_a[name], FileReference(values).get(name), name, rtol, atol)
                         for name in a.fn.block.outputs if name in values}
    report["only_a"], report["only_b"] = [], []
    return _finish(report)


def _compare(a: Side, reference, inputs: dict, rtol, atol, run_options) -> dict:
    from ..interpreter import Session
    comparison = Comparison(a, reference, rtol, atol)
    with Session(a.model.program, a.model.folder, run_options.pop("confine_refs", False)) as session:
        outputs = session.run(inputs, a.function, observer=with_consts(session, a.function, comparison.observe),
                              **run_options)
    return {"first_divergence": comparison.first, "pairs": list(comparison.pairs.values()),
            "incomparable": comparison.incomparable, "_outputs": outputs}


def _output(ours, theirs, their_name: str, rtol, atol) -> dict:
    found = {"b": their_name}
    why = comparable(ours, theirs) if is_array(ours) and is_array(theirs) else "not arrays"
    if why is not None:
        found.update(within=False, why=why)
        return found
    m = measure(ours, theirs, rtol, atol)
    found.update(within=m.within, max_abs=m.max_abs, max_rel=m.max_rel, outside=m.outside, size=m.size,
                 rtol=m.rtol, atol=m.atol)
    return found


def _finish(report: dict) -> dict:
    outputs = report["outputs"].values()
    report["agree"] = all(o["within"] for o in outputs) if outputs else \
        all(p["outside"] == 0 for p in report["pairs"])
    return report


def _inputs_for(b: Side, a: Side, inputs: dict) -> dict:
    """A's inputs under B's names: as they are when B has those names, else by position."""
    names_b = [var.name for var in b.fn.inputs]
    if set(inputs) <= set(names_b):
        return inputs
    names_a = [var.name for var in a.fn.inputs]
    if len(names_a) != len(names_b):
        raise InputError(f"{b.path}: its {b.function} takes {len(names_b)} input(s), {a.path}'s "
                         f"{len(names_a)}: the two cannot run on the same inputs")
    by_position = dict(zip(names_a, names_b))
    return {by_position.get(k, k): v for k, v in inputs.items()}
