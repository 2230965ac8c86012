"""Audit miltext's native inference rules against coremltools' own type inference, on every op
of real programs.

    python scripts/audit_inference.py [PROGRAM.pb ...]
        (default: tests/corpus/conversions/*.pb and tests/corpus/coremltools/*.pb)

Two comparisons, each op by op, exact (a `?` must be a `?`, a size the same size):
- recorded: the program stripped to the sugar (no output types) and inferred again; each op a
  native rule typed is compared with the type coremltools recorded when it made the program
  (sizes flow from op to op, as they did in the conversion);
- builder: each op a native rule covers, its inputs typed as the program declares them, is
  built alone in coremltools' MIL builder from the same input types and known values, and the
  two results are compared.
Prints the ops compared and every disagreement; exits 1 if there is any. (The recorded types are
those of coremltools' last retyping of the program: its reduce_transposes pass infers every op of
the converted program again, in order, as `infer` does.)
"""
from __future__ import annotations

import glob
import logging
import os
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "scripts"))

from infer_coverage import strip_to_sugar  # noqa: E402

import miltext  # noqa: E402
from miltext.infer import coremltools_rules, engine, fill_names, infer, registry  # noqa: E402  # noqa: E402
from miltext.infer.complete import blocks  # noqa: E402
from miltext.infer.errors import InferenceError, Unsupported  # noqa: E402
from miltext.infer.symbols import concrete  # noqa: E402
from miltext.text.mil.printer import type_text  # noqa: E402


def _text(types) -> str:
    return ", ".join("no type" if t is None else type_text(t) for t in types)


def recorded(data: bytes, label: str, disagreements: list) -> int:
    """Native rules on the stripped program against the types the program records."""
    original = miltext.Program.from_proto(data)
    want = {op.name: [v.type for v in op.outputs] for block in blocks(original) for op in block.operations}
    program = miltext.Program.from_proto(data)
    strip_to_sugar(program)
    fill_names(program)
    native = []
    infer(program, report=lambda op, family: native.append(op) if family != engine.COREMLTOOLS else None)
    for op in native:
        got = [v.type for v in op.outputs]
        if got != want[op.name]:
            disagreements.append(("recorded", label, op.type, op.name, _text(want[op.name]), _text(got)))
    return len(native)


def builder(data: bytes, label: str, disagreements: list, unbuilt: list) -> int:
    """Native rules against coremltools' builder, op by op, on the declared input types."""
    program = miltext.Program.from_proto(data)
    compared = 0

    def visit(op, operands):
        nonlocal compared
        if registry.native(op.type) is None or op.type == "const" or op.blocks:
            return None
        try:
            mine = registry.native(op.type)[1](operands)
        except (Unsupported, InferenceError) as e:
            mine = e
        values = operands.output_values
        try:
            theirs = coremltools_rules.infer(operands)
        except InferenceError as e:
            theirs = e
        operands.output_values = values
        if isinstance(mine, Unsupported):
            return None          # the rule leaves it to coremltools: nothing of its own to audit
        if isinstance(theirs, Exception) and not isinstance(mine, Exception):
            # coremltools accepted the op when it made the program: failing alone, it lacks
            # what the harness cannot give it (a state, a list, real weight values)
            unbuilt.append((label, op.type, op.name))
            return mine
        compared += 1
        a = mine if isinstance(mine, Exception) else [concrete(t) for t in mine]
        b = theirs if isinstance(theirs, Exception) else [concrete(t) for t in theirs]
        if isinstance(a, Exception) or isinstance(b, Exception) or a != b:
            show = [x if isinstance(x, Exception) else _text(x) for x in (b, a)]
            disagreements.append(("builder", label, op.type, op.name, str(show[0]), str(show[1])))
        return None if isinstance(mine, Exception) else mine
    engine._walk(program, visit)
    return compared


def main(paths: list) -> int:
    logging.getLogger("coremltools").setLevel(logging.ERROR)
    paths = paths or (sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "conversions", "*.pb")))
                      + sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "coremltools", "*.pb"))))
    disagreements: list = []
    unbuilt: list = []
    compared: Counter = Counter()
    for path in paths:
        label = os.path.relpath(path, ROOT)
        with open(path, "rb") as f:
            data = f.read()
        compared["recorded"] += recorded(data, label, disagreements)
        compared["builder"] += builder(data, label, disagreements, unbuilt)
    print(f"programs: {len(paths)}")
    for kind in ("recorded", "builder"):
        found = [d for d in disagreements if d[0] == kind]
        print(f"{kind}: ops compared {compared[kind]}, disagreements {len(found)}")
    print(f"builder: ops coremltools cannot build alone (covered by recorded): {len(unbuilt)} "
          f"({', '.join(sorted({op_type for _, op_type, _ in unbuilt}))})")
    for kind, label, op_type, name, want, got in disagreements:
        print(f"  [{kind}] {label}: {op_type} {name}: coremltools {want}, miltext {got}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
