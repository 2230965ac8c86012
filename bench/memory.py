"""Peak memory of reading big MIL text, as a multiple of the text's size.

Each input is written to bench/out/, then `miltext print` and `miltext check` run on it in a
fresh process whose peak resident memory (ru_maxrss) is read. The inputs: a 10M-number literal
(about 100 MB of text), and a transformer of many ops with inline weights (bench/programs.py).

    python bench/memory.py [--elements 10000000] [--ops 80000]
"""
from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out")

MEASURE = """
import resource, subprocess, sys
run = subprocess.run([sys.executable, "-m", "miltext.cli", *sys.argv[1:]], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, run.returncode)
"""


def big_literal(n: int) -> str:
    values = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    buf = io.StringIO()
    np.savetxt(buf, values.reshape(1, -1), fmt="%.6g", delimiter=", ")
    return (f"main[CoreML7](%x: ({n}, fp32)) {{\n  block0() {{\n"
            f"    %w: ({n}, fp32) = const(val=[{buf.getvalue().strip()}], name=\"w\")\n"
            f"    %y: ({n}, fp32) = add(x=%x, y=%w, name=\"y\")\n  }} -> (%y)\n}}\n")


def many_ops(n: int) -> str:
    sys.path.insert(0, HERE)
    from programs import miltext_transformer

    import miltext
    return miltext.dumps(miltext_transformer(n))


def peak(*args) -> tuple[int, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", MEASURE, *args], capture_output=True, text=True, check=True)
    rss, status = out.stdout.split()
    assert status == "0", f"miltext {' '.join(args)} failed"
    return int(rss), time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, default=10_000_000)
    ap.add_argument("--ops", type=int, default=80_000)
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    baseline, _ = peak("--version")
    print(f"a miltext process that reads nothing peaks at {baseline / 1e6:.0f} MB")
    print(f"{'input':<28} {'text MB':>8} {'command':<7} {'peak MB':>8} {'peak/text':>9} {'seconds':>8}")
    for name, make in ((f"{args.elements:,}-number literal", lambda: big_literal(args.elements)),
                       (f"{args.ops:,} ops", lambda: many_ops(args.ops))):
        path = os.path.join(OUT, "memory.mil")
        text = make()
        with open(path, "w") as f:
            f.write(text)
        size = len(text.encode())
        for command in ("print", "check"):
            rss, seconds = peak(command, path)
            print(f"{name:<28} {size / 1e6:>8.1f} {command:<7} {rss / 1e6:>8.0f} {rss / size:>8.1f}x {seconds:>8.1f}",
                  flush=True)
        os.remove(path)


if __name__ == "__main__":
    main()
