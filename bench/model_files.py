"""Benchmark model files: miltext's unpack and pack next to coremltools' own load and save.

    python bench/model_files.py [--reps N]

Two packages: the largest .mlpackage of the test corpus, and a 50k-op program (bench/programs.py,
cached in bench/out/ like run.py's) made into a package by `miltext build`'s code path. For each:

- miltext unpack   .mlpackage -> DIR/model.mil + DIR/weights/ (read, decode, print, copy weights)
- miltext pack     DIR -> .mlpackage (parse, encode, write, copy weights)
- coremltools load ct.models.MLModel(path, skip_model_load=True) + load_mil_proto of its program
- coremltools save MLModel.save(path) of the model loaded once

Each number is the median of several runs, in-process (no interpreter start-up). A benchmark,
not a test: it never fails on a number.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

import programs  # noqa: E402
import run  # noqa: E402  (bench/run.py: timing and the cached programs)

import miltext  # noqa: E402
from miltext.model import Model, pack, unpack, write_model  # noqa: E402
from miltext.model.derive import derived_spec  # noqa: E402

CORPUS = BENCH.parent / "tests" / "corpus" / "coremltools"
OUT = BENCH / "out" / "model_files"
OPS = 50_000


def largest_corpus_package() -> Path:
    packages = sorted(CORPUS.glob("*.mlpackage"))
    return max(packages, key=lambda p: sum(f.stat().st_size for f in p.rglob("*") if f.is_file()))


def program_package(n_ops: int) -> Path:
    """A package holding the n-op benchmark program, with the description miltext derives."""
    pb, _ = run.cached_program(f"transformer_{n_ops}", lambda: programs.transformer_proto(n_ops), rebuild=False)
    path = OUT / f"transformer_{n_ops // 1000}k.mlpackage"
    program = miltext.Program.from_proto(pb)
    write_model(Model(program, derived_spec(program), folder=None), str(path))
    return path


def coremltools_load(path: Path):
    import coremltools as ct
    from coremltools.converters.mil.frontend.milproto.load import load_mil_proto
    model = ct.models.MLModel(str(path), skip_model_load=True)
    spec = model.get_spec()
    load_mil_proto(spec.mlProgram, spec.specificationVersion, model.weights_dir)
    return model


def measure(path: Path, reps: int) -> dict:
    work = OUT / path.stem
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    folder, packed, saved = work / "unpacked", work / "packed.mlpackage", work / "saved.mlpackage"
    t = {}
    t["miltext unpack"], _ = run.time_it(lambda: unpack(str(path), str(folder)), reps)
    t["miltext pack"], _ = run.time_it(lambda: pack(str(folder), str(packed)), reps)
    t["coremltools load"], model = run.time_it(lambda: coremltools_load(path), reps)

    def save():
        shutil.rmtree(saved, ignore_errors=True)
        model.save(str(saved))
    t["coremltools save"], _ = run.time_it(save, reps)
    return t


def size_of(path: Path) -> str:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
    return f"{total / 1024:.0f} KB" if total < 1 << 20 else f"{total / (1 << 20):.1f} MB"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="runs per step (the median is shown)")
    args = ap.parse_args(argv)
    OUT.mkdir(parents=True, exist_ok=True)
    cases = [("largest corpus package", largest_corpus_package()), (f"{OPS // 1000}k-op program", program_package(OPS))]
    results = [(label, path, measure(path, args.reps)) for label, path in cases]
    columns = "AB"
    print(f"median of {args.reps} runs, in seconds (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    for column, (label, path, _) in zip(columns, results):
        print(f"  {column}: {label}, {path.name} ({size_of(path)})")
    print(f"\n{'step':18}" + "".join(f"{c:>10}" for c in columns))
    for step in results[0][2]:
        print(f"{step:18}" + "".join(f"{r[step].median:>10.3f}" for _, _, r in results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
