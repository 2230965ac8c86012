"""What the formatter costs, and what it does not: parsing the 10k-op program (text -> objects)
with this tree and with the tree before the formatter (miltext/source) existed, in the same run,
alternating, so that the ratio says whether the bulk path pays anything for comments; and the
time `miltext fmt` takes on that program's text, next to a plain parse.

    .venv/bin/python bench/fmt.py [--base REV] [--reps N]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# Run in a child with `root` first on sys.path: the best of `reps` timings of each step, in seconds.
_CHILD = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
import miltext
text = miltext.proto_to_text(open(sys.argv[2], "rb").read())
steps = {"parse": lambda: miltext.loads(text), "print": lambda p: miltext.dumps(p)}
program = miltext.loads(text)
best = {}
for name, step in [("parse", lambda: miltext.loads(text)), ("print", lambda: miltext.dumps(program))]:
    times = []
    for _ in range(int(sys.argv[3])):
        start = time.perf_counter(); step(); times.append(time.perf_counter() - start)
    best[name] = min(times)
if sys.argv[4] == "fmt":
    from miltext.source.formatter import format_source
    start = time.perf_counter(); out = format_source(text); best["fmt"] = time.perf_counter() - start
    assert out == text, "fmt of canonical text changed it"
print(repr(best))
"""


def base_revision() -> str:
    """The commit before the one that added miltext/source."""
    added = subprocess.run(["git", "log", "--diff-filter=A", "--format=%H", "--", "miltext/source/__init__.py"],
                           cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    if not added:
        raise SystemExit("no commit adds miltext/source: give --base")
    return added[-1] + "^"


def export(rev: str, into: str) -> None:
    """The package and grammar at `rev`, with this tree's built extensions (their C is the same)."""
    archive = subprocess.run(["git", "archive", rev, "miltext", "grammar"], cwd=REPO, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", into], input=archive.stdout, check=True)
    for so in REPO.glob("miltext/**/*.so"):
        target = Path(into) / so.relative_to(REPO)
        if target.with_suffix("").with_suffix(".c").exists() or target.parent.exists():
            target.write_bytes(so.read_bytes())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", help="the revision to compare with (default: before miltext/source)")
    p.add_argument("--reps", type=int, default=5, help="timings per step per round (the best counts)")
    p.add_argument("--rounds", type=int, default=3, help="rounds, each timing both trees")
    args = p.parse_args(argv)
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(HERE))
    from run import cached_program
    import programs
    pb, _ = cached_program("transformer_10000", lambda: programs.transformer_proto(10_000), False)
    base = args.base or base_revision()
    with tempfile.TemporaryDirectory() as tmp:
        old, new = os.path.join(tmp, "base"), os.path.join(tmp, "tree")
        os.mkdir(old)
        export(base, old)
        for folder in ("miltext", "grammar"):  # both trees from the same kind of place
            shutil.copytree(REPO / folder, os.path.join(new, folder), ignore=shutil.ignore_patterns("__pycache__"))
        pb_path = os.path.join(tmp, "program.pb")
        Path(pb_path).write_bytes(pb)
        best: dict = {}
        trees = [("before", old, "-"), ("after", new, "fmt")]
        for round_ in range(args.rounds):
            for label, root, extra in trees if round_ % 2 == 0 else trees[::-1]:
                out = subprocess.run([sys.executable, "-c", _CHILD, root, pb_path, str(args.reps), extra],
                                     capture_output=True, text=True, check=True).stdout
                for step, seconds in eval(out).items():  # noqa: S307 (our own child's repr of a dict)
                    key = (label, step)
                    best[key] = min(seconds, best.get(key, seconds))
    print(f"10k-op program, best of {args.rounds} rounds x {args.reps}; before = {base}")
    for step in ("parse", "print"):
        b, a = best["before", step], best["after", step]
        print(f"  {step:6s} before {b * 1000:8.1f} ms   after {a * 1000:8.1f} ms   after/before {a / b:.3f}")
    print(f"  fmt of its canonical text {best['after', 'fmt'] * 1000:.1f} ms "
          f"= {best['after', 'fmt'] / best['after', 'parse']:.2f} x a parse (two parses, a print, a check)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
