"""What the formatter costs, and what it does not: parsing the 10k-op program (text -> objects)
with this tree and with the tree before the formatter (miltext/source) existed, in the same run,
alternating, so that the ratio says whether the bulk path pays anything for comments; the same
parse with this tree's grammar and the grammar at that revision, in one interpreter (the parse
path's one change, isolated from whatever else changed since); and the time `miltext fmt` takes
on that program's text, next to a plain parse. Times are CPU times (time.process_time), which
other work on a busy machine disturbs less than wall-clock times.

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
        start = time.process_time(); step(); times.append(time.process_time() - start)
    best[name] = min(times)
if sys.argv[4] == "fmt":
    from miltext.authored.formatter import format_source
    start = time.process_time(); out = format_source(text); best["fmt"] = time.process_time() - start
    assert out == text, "fmt of canonical text changed it"
    commented = "# a comment\n" + text.replace("  block0() {\n", "  block0() {  # the body\n")
    start = time.process_time(); out = format_source(commented); best["fmt commented"] = time.process_time() - start
    assert out == commented, "fmt of commented canonical text changed it"
print(repr(best))
"""


def base_revision() -> str:
    """The commit before the one that added the formatter (as miltext/source, now miltext/authored)."""
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


# In a child: the best and median parse times of the text with the grammar now and at the base.
_GRAMMARS = r"""
import statistics, sys, time
sys.path.insert(0, sys.argv[1])
import miltext
from miltext.bulk import bulk
from miltext.text import parser
text = miltext.proto_to_text(open(sys.argv[2], "rb").read())
now = parser.grammar_text()
parsers = {}
for label, grammar in (("before", open(sys.argv[3], encoding="utf-8").read()), ("after", now)):
    parser.grammar_text = lambda name="mil.lark", grammar=grammar: grammar
    parsers[label] = parser._Parser(False)
times = {"before": [], "after": []}
for i in range(int(sys.argv[4])):
    for label in (("before", "after") if i % 2 else ("after", "before")):
        start = time.process_time()
        with bulk():
            parsers[label].parse(text)
        times[label].append(time.process_time() - start)
print(repr({k: (min(v), statistics.median(v)) for k, v in times.items()}))
"""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--base", help="the revision to compare with (default: before miltext/source)")
    p.add_argument("--reps", type=int, default=5, help="timings per step per round (the best counts)")
    p.add_argument("--rounds", type=int, default=3, help="rounds, each timing both trees")
    args = p.parse_args(argv)
    sys.path.insert(0, str(REPO))
    sys.path.insert(0, str(HERE))
    import programs
    from run import cached_program
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
        old_grammar = os.path.join(old, "grammar", "mil.lark")
        out = subprocess.run([sys.executable, "-c", _GRAMMARS, new, pb_path, old_grammar, str(4 * args.reps)],
                             capture_output=True, text=True, check=True).stdout
        grammars = eval(out)  # noqa: S307
    print(f"10k-op program, best of {args.rounds} rounds x {args.reps}; before = {base}")
    for step in ("parse", "print"):
        b, a = best["before", step], best["after", step]
        print(f"  {step:6s} before {b * 1000:8.1f} ms   after {a * 1000:8.1f} ms   after/before {a / b:.3f}")
    print(f"  parse, this grammar / the grammar at {base}, in one interpreter: "
          f"best {grammars['after'][0] / grammars['before'][0]:.3f}, median {grammars['after'][1] / grammars['before'][1]:.3f}")
    parse = best["after", "parse"]
    print(f"  fmt of its canonical text {best['after', 'fmt'] * 1000:.1f} ms = "
          f"{best['after', 'fmt'] / parse:.2f} x a parse (a parse and a print: it is left as it is)")
    print(f"  fmt of it with two comments {best['after', 'fmt commented'] * 1000:.1f} ms = "
          f"{best['after', 'fmt commented'] / parse:.2f} x a parse (and the check: a parse, a print)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
