"""Start-up of `miltext textconv` next to `python -c "import coremltools"`: git runs textconv
once per file version, so a whole process, start to finish, is what counts.

    python bench/textconv_startup.py [--rounds N]

Times each whole process (wall clock, taking turns, so both see the same machine load) on the
model of a small package (the 6-layer MLP of tests/review) and prints the medians and their
ratio; the issue's target is 0.1 or less. Also says whether numpy, lark or the parser were
imported by textconv (they should not be). A benchmark, not a test: it never fails.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "tests", "review", "mlp6.mlpackage", "Data", "com.apple.CoreML", "model.mlmodel")
TEXTCONV = [sys.executable, "-m", "miltext.cli", "textconv", MODEL]
COREMLTOOLS = [sys.executable, "-c", "import coremltools"]


def wall(command: list) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=ROOT)
    return time.perf_counter() - start


def heavy_imports() -> list:
    """The heavy modules a textconv run imports."""
    probe = ("import sys, runpy; sys.argv = ['miltext', 'textconv', %r]\n"
             "try:\n    runpy.run_module('miltext.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(' '.join(m for m in ('numpy', 'lark', 'miltext.text.parser', 'coremltools') if m in sys.modules),"
             " file=sys.stderr)") % MODEL
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    return result.stderr.split()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args()
    wall(TEXTCONV), wall(COREMLTOOLS)          # warm the file cache
    textconv, coremltools = [], []
    for _ in range(args.rounds):
        textconv.append(wall(TEXTCONV))
        coremltools.append(wall(COREMLTOOLS))
    t, c = statistics.median(textconv), statistics.median(coremltools)
    print(f"miltext textconv (small package)  median {t * 1000:7.1f} ms  best {min(textconv) * 1000:7.1f} ms")
    print(f"python -c 'import coremltools'    median {c * 1000:7.1f} ms  best {min(coremltools) * 1000:7.1f} ms")
    print(f"ratio textconv / import coremltools: {t / c:.3f} (target <= 0.1)")
    print(f"heavy modules textconv imported: {', '.join(heavy_imports()) or 'none'}")


if __name__ == "__main__":
    main()
