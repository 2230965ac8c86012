"""Start-up of `miltext textconv` next to `python -c "import coremltools"`: git runs textconv
once per file version, so a whole process, start to finish, is what counts.

    python bench/textconv_startup.py [--rounds N] [--no-wheel]

Times each whole process (wall clock, taking turns, so all see the same machine load) on the
model of a small package (the 6-layer MLP of tests/review) and prints the medians and their
ratios; the issue's target is 0.1 or less. Two installs of miltext are timed:

- dev: this tree, as its venv runs it (an editable install, whose import finder site.py loads
  in every process, coremltools' included);
- wheel (unless --no-wheel): a wheel of this tree installed once per run into a temporary venv
  that sees this venv's packages (protobuf, coremltools) but has no editable finder: what a
  user who installs the wheel runs.

Both run with their bytecode compiled, as pip leaves an install (coremltools' is); the tree's is
compiled first, whatever PYTHONDONTWRITEBYTECODE says. Also says whether textconv imported any
heavy module (it should not). A benchmark, not a test: it never fails.
"""
from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "tests", "review", "mlp6.mlpackage", "Data", "com.apple.CoreML", "model.mlmodel")
COREMLTOOLS = [sys.executable, "-c", "import coremltools"]
HEAVY = ("numpy", "lark", "miltext.text.mil.parser", "coremltools", "google.protobuf.descriptor_pb2",
         "google.protobuf.descriptor_pool", "argparse")


def textconv(python: str) -> list:
    return [python, "-m", "miltext.cli", "textconv", MODEL]


def wall(command: list, cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, cwd=cwd)
    return time.perf_counter() - start


def heavy_imports(python: str, cwd: str) -> list:
    """The heavy modules a textconv run imports."""
    probe = ("import sys, runpy; sys.argv = ['miltext', 'textconv', %r]\n"
             "try:\n    runpy.run_module('miltext.cli', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(' '.join(m for m in %r if m in sys.modules), file=sys.stderr)") % (MODEL, HEAVY)
    result = subprocess.run([python, "-c", probe], capture_output=True, text=True, cwd=cwd)
    return result.stderr.split()


def wheel_install(tmp: str) -> str:
    """The python of a new venv in `tmp` holding a wheel of this tree, compiled; this venv's
    site-packages (and what its .pth files add) on its path, so it has protobuf."""
    venv = os.path.join(tmp, "venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = os.path.join(venv, "bin", "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    others = [p for p in sys.path if p.endswith("site-packages") and p != ours]
    with open(os.path.join(site, "_bench_deps.pth"), "w") as f:
        f.write("\n".join([ours, *others]) + "\n")     # after the venv's own site-packages
    # built from a copy of what the wheel holds: setuptools builds in-tree in build/, where files
    # since removed from the tree would linger
    source = os.path.join(tmp, "source")
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.pyc")
    for name in ("miltext", "grammar"):
        shutil.copytree(os.path.join(ROOT, name), os.path.join(source, name), ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(ROOT, name), source)
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--target", site, source], check=True, cwd=tmp)
    compileall.compile_dir(os.path.join(site, "miltext"), quiet=1)
    return python


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--no-wheel", action="store_true", help="time the dev tree only")
    args = ap.parse_args()
    compileall.compile_dir(os.path.join(ROOT, "miltext"), quiet=1)
    with tempfile.TemporaryDirectory() as tmp:
        runs = {"dev": (textconv(sys.executable), ROOT)}   # the tree itself: cwd is on the path
        if not args.no_wheel:
            python = wheel_install(tmp)
            runs["wheel"] = (textconv(python), tmp)   # not ROOT: its miltext would shadow the wheel's
            runs["floor"] = ([python, "-c", "pass"], tmp)   # the interpreter alone, for scale
        runs["coremltools"] = (COREMLTOOLS, ROOT)
        times = {name: [] for name in runs}
        for command, cwd in runs.values():
            wall(command, cwd)                      # warm the file cache
        for _ in range(args.rounds):
            for name, (command, cwd) in runs.items():
                times[name].append(wall(command, cwd))
        medians = {name: statistics.median(t) for name, t in times.items()}
        labels = {"dev": "miltext textconv (dev install)", "wheel": "miltext textconv (wheel install)",
                  "floor": "python -c pass (wheel's venv)", "coremltools": "python -c 'import coremltools'"}
        for name, t in times.items():
            print(f"{labels[name]:34s} median {medians[name] * 1000:7.1f} ms  best {min(t) * 1000:7.1f} ms")
        for name in ("dev", "wheel"):
            if name in runs:
                print(f"ratio textconv ({name}) / import coremltools: {medians[name] / medians['coremltools']:.3f}"
                      " (target <= 0.1)")
        for name, (command, cwd) in runs.items():
            if name in ("dev", "wheel"):
                print(f"heavy modules textconv ({name}) imported: {', '.join(heavy_imports(command[0], cwd)) or 'none'}")


if __name__ == "__main__":
    main()
