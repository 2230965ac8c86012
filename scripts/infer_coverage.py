"""How much of the corpus miltext's native inference rules type on their own.

    python scripts/infer_coverage.py [PROGRAM.pb ...]   (default: tests/corpus/coremltools/*.pb)

Each program is stripped to what a person would write by hand (no output types, no `name=`
that only repeats the first output's name), inferred again, and compared byte for byte with
the original. Prints, per op family, how many ops the native rules typed and how many went to
coremltools, and exits 1 if any program does not come back the same.
"""
from __future__ import annotations

import glob
import os
import sys
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import miltext
from miltext.infer import fill_names, infer
from miltext.infer.complete import blocks
from miltext.infer.engine import COREMLTOOLS


def strip_to_sugar(program) -> None:
    for block in blocks(program):
        for op in block.operations:
            for var in op.outputs:
                var.type = None
            if op.outputs and op.name == op.outputs[0].name:
                del op.attributes["name"]


def reinfer(data: bytes) -> tuple[bytes, Counter]:
    """The program's proto bytes after stripping and inferring, and (family, op type) -> count
    of who typed each op ("coremltools" as the family for the fallback)."""
    program = miltext.Program.from_proto(data)
    strip_to_sugar(program)
    fill_names(program)
    who: Counter = Counter()
    infer(program, report=lambda op, family: who.update([(family, op.type)]))
    return program.to_proto().SerializeToString(deterministic=True), who


def canonical_bytes(data: bytes) -> bytes:
    return miltext.Program.from_proto(data).to_proto().SerializeToString(deterministic=True)


def main(paths: list) -> int:
    paths = paths or sorted(glob.glob(os.path.join(ROOT, "tests", "corpus", "coremltools", "*.pb")))
    total: Counter = Counter()
    different = []
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        got, who = reinfer(data)
        total.update(who)
        if got != canonical_bytes(data):
            different.append(path)
    families: Counter = Counter()
    for (family, _), n in total.items():
        families[family] += n
    print(f"{len(paths) - len(different)}/{len(paths)} programs come back byte-identical")
    print(f"{'family':24} ops")
    for family, n in sorted(families.items(), key=lambda kv: (kv[0] == COREMLTOOLS, kv[0])):
        print(f"{family:24} {n}")
    native = sum(n for f, n in families.items() if f != COREMLTOOLS)
    print(f"native: {native} of {sum(families.values())} ops")
    fallback = sorted({t for (f, t) in total if f == COREMLTOOLS})
    print(f"coremltools typed: {', '.join(fallback)}")
    for path in different:
        print(f"DIFFERENT: {path}")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
