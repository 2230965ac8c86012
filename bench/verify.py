"""What verification costs: `check` of the 10k-op program against its parse, and `build` of the
same program written in the shorthand against `build` of its fully typed text.

A benchmark, not a test: it prints timings and ratios, and never fails on a missed target.

    python bench/verify.py [--ops 10000] [--rounds 5]

- **parse**: `miltext.loads(text)` of the program's canonical text.
- **check**: `miltext.check(program, source=text)` of the parsed program (what `miltext check`
  adds to the parse), and `miltext check FILE` in-process, reading included.
- **build (typed)**: `miltext build FILE -o OUT.mlpackage` of the canonical text, every type
  written: reading, verification, writing.
- **build (shorthand)**: the same program with no output types and no `name=` on any op
  but the consts, and every const of at most 8 elements written inline where it is used
  (docs/syntax.md, "Hand-written programs"), so the build infers the types and writes the
  consts and names in, after verifying.

Steps take turns, one of each per round (bench/run.py's `time_rounds`), medians reported.
Targets (issue 14): check <= 1.0x parse; build (shorthand) <= 2x build (typed).
"""
from __future__ import annotations

import argparse
import io
import os
import shutil
import sys
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))   # the source tree, not an installed miltext
sys.path.insert(0, str(BENCH))

import programs  # noqa: E402
from run import time_rounds  # noqa: E402

import miltext  # noqa: E402
from miltext.cli import main as miltext_main  # noqa: E402
from miltext.ir import Value  # noqa: E402

INLINE_AT_MOST = 8   # elements of a const written inline in the shorthand


def shorthand(program) -> None:
    """The program as a person would write it, in place: output types and names left to
    inference, small consts inline at their uses."""
    fn = program.functions["main"]
    block = fn.block
    small = {}
    for op in block.operations:
        if op.type == "const":
            val = op.attributes.get("val")
            count = getattr(val.type, "element_count", None) if val is not None else None
            if count is not None and count <= INLINE_AT_MOST:
                small[op.outputs[0].name] = val
    small = {name: v for name, v in small.items() if name not in block.outputs}
    kept = []
    for op in block.operations:
        if op.type == "const":
            if op.outputs[0].name not in small:
                kept.append(op)
            continue
        for bindings in op.inputs.values():
            for i, b in enumerate(bindings):
                if isinstance(b, str) and b in small:
                    bindings[i] = Value(small[b].type, small[b].data)
        op.attributes.pop("name", None)
        for out in op.outputs:
            out.type = None
        kept.append(op)
    block.operations = kept


def quiet(fn):
    def run(*_):
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            return fn()
    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args(argv)

    program = programs.miltext_transformer(args.ops)
    typed = miltext.dumps(program)
    short_program = miltext.loads(typed)
    shorthand(short_program)
    short = miltext.dumps(short_program)
    folder = tempfile.mkdtemp(prefix="miltext-bench-verify-")
    try:
        paths = {name: os.path.join(folder, f"{name}.mil") for name in ("typed", "short")}
        for name, text in (("typed", typed), ("short", short)):
            with open(paths[name], "w", encoding="utf-8") as f:
                f.write(text)

        def build(name):
            out = os.path.join(folder, f"{name}.mlpackage")
            status = miltext_main(["build", paths[name], "-o", out])
            assert status == 0, f"build of the {name} text failed"
            return out

        def check_file():
            assert miltext_main(["check", paths["typed"]]) == 0, "check found errors"

        steps = {
            "parse": lambda r: miltext.loads(typed),
            "check": lambda r: miltext.check(r["parse"], source=typed),
            "check FILE": quiet(check_file),
            "build (typed)": quiet(lambda: build("typed")),
            "build (shorthand)": quiet(lambda: build("short")),
        }
        timings, results = time_rounds(steps, args.rounds)
        assert results["check"] == [], results["check"][:3]
        same = _program_of(results["build (typed)"]) == _program_of(results["build (shorthand)"])
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    ops = sum(1 for _ in program.functions["main"].block.operations)
    print(f"program: {ops} ops; canonical text {len(typed) / 1e6:.2f} MB, shorthand {len(short) / 1e6:.2f} MB "
          f"({sum(line.count(' = ') for line in short.splitlines())} ops written, the rest inline)")
    print(f"{'step':<20}{'median':>10}{'best':>10}")
    for name, t in timings.items():
        print(f"{name:<20}{t.median:>9.3f}s{t.min:>9.3f}s")
    print()
    rows = [("check / parse", timings["check"].median / timings["parse"].median, 1.0),
            ("check FILE / parse", timings["check FILE"].median / timings["parse"].median, None),
            ("build shorthand / typed", timings["build (shorthand)"].median / timings["build (typed)"].median, 2.0)]
    for name, ratio, target in rows:
        verdict = "" if target is None else f"  (target <= {target:.1f}: {'met' if ratio <= target else 'MISSED'})"
        print(f"{name:<26}{ratio:6.2f}x{verdict}")
    print(f"\nthe two builds write the same program: {'yes' if same else 'no (names and const placement differ)'}")
    return 0


def _program_of(package: str) -> bytes | None:
    from miltext.model import read_model
    try:
        return read_model(package).program.to_bytes(strict=True)
    except Exception:
        return None


if __name__ == "__main__":
    sys.exit(main())
