"""The structural diff next to the plain text diff, on the 10k-op program of bench/programs.py
against a copy with one op inserted in its middle (a `relu` between two ops, the second now
reading it: what a layer inserted into a model looks like).

    python bench/review_diff.py [--rounds N] [--ops 10000]

Times whole processes, as a user runs them, taking turns so both see the same machine load:
`miltext diff A B` (structural) and `miltext diff --text A B` (plain unified diff of the
canonical texts); prints the medians and their ratio (the issue's target: 2 or less), and the
same two in-process (no interpreter start-up), and, for scale, the least any text diff does
(the native printer's two texts through difflib). A benchmark, not a test: it never fails.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))

import programs  # noqa: E402  (bench/programs.py)

OUT = BENCH / "out" / "review"


def make_pair(n_ops: int) -> tuple[str, str]:
    """A.pb, the n_ops program, and B.pb, the same with one op inserted (cached in bench/out)."""
    a, b = OUT / f"transformer_{n_ops}.pb", OUT / f"transformer_{n_ops}_inserted.pb"
    if not (a.exists() and b.exists()):
        import miltext
        from miltext.ir import Operation, Value, Var
        OUT.mkdir(parents=True, exist_ok=True)
        data, _ = programs.transformer_proto(n_ops, use_coremltools=False)
        program = miltext.Program.from_proto(data)
        ops = program.functions["main"].block.operations
        at = next(k for k in range(len(ops) // 2, len(ops)) if ops[k].type not in ("const", "identity"))
        source = ops[at].outputs[0]
        relu = Operation("relu", inputs={"x": [source.name]}, outputs=[Var("inserted_relu", source.type)],
                         attributes={"name": Value.tensor("inserted_relu")})
        consumer = next(op for op in ops[at + 1:] if any(source.name in b for b in op.inputs.values()))
        for bindings in consumer.inputs.values():
            bindings[:] = ["inserted_relu" if x == source.name else x for x in bindings]
        ops.insert(at + 1, relu)
        a.write_bytes(data)
        b.write_bytes(program.to_bytes())
    return str(a), str(b)


def wall(command: list) -> float:
    start = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=REPO)
    if result.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(command)} failed: {result.stderr.decode()}")
    return time.perf_counter() - start


def in_process(a: str, b: str) -> tuple:
    """(structural, text) in-process, each reading both files and writing the diff text."""
    import difflib

    import miltext
    from miltext.model.file_text import file_text
    from miltext.review import Side, compare

    def structural():
        return compare(Side.read(a), Side.read(b)).text()

    def text():
        x, y = file_text(a, None), file_text(b, None)
        return "".join(difflib.unified_diff(x.splitlines(True), y.splitlines(True), a, b))

    def printed():   # the least a text diff can do: the native printer's texts, difflib
        x, y = (miltext.proto_to_text(Path(p).read_bytes()) for p in (a, b))
        return "".join(difflib.unified_diff(x.splitlines(True), y.splitlines(True), a, b))
    return structural, text, printed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--ops", type=int, default=10_000)
    args = ap.parse_args()
    a, b = make_pair(args.ops)
    miltext = [sys.executable, "-m", "miltext.cli", "diff"]
    steps = {"structural": miltext + [a, b], "text": miltext + ["--text", a, b]}
    structural_fn, text_fn, printed_fn = in_process(a, b)
    functions = {"structural": structural_fn, "text": text_fn}
    samples = {name: [] for name in steps}
    inner = {name: [] for name in steps}
    for _ in range(args.rounds):
        for name, command in steps.items():
            samples[name].append(wall(command))
            start = time.perf_counter()
            functions[name]()
            inner[name].append(time.perf_counter() - start)
    print(f"{args.ops}-op program against a copy with one op inserted ({args.rounds} rounds, medians)")
    for name in steps:
        print(f"  miltext diff {'--text ' if name == 'text' else ''}{'':8} process {statistics.median(samples[name]) * 1000:8.1f} ms"
              f"   in-process {statistics.median(inner[name]) * 1000:8.1f} ms")
    ratio = statistics.median(samples["structural"]) / statistics.median(samples["text"])
    inner_ratio = statistics.median(inner["structural"]) / statistics.median(inner["text"])
    print(f"ratio structural / text: {ratio:.2f} whole process, {inner_ratio:.2f} in-process (target <= 2)")
    printed = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        printed_fn()
        printed.append(time.perf_counter() - start)
    p = statistics.median(printed)
    print(f"  native print of both + difflib (no weights looked at) in-process {p * 1000:8.1f} ms: "
          f"structural / that {statistics.median(inner['structural']) / p:.2f}")
    summary = functions["structural"]().splitlines()[2]
    print(f"structural diff says: {summary}")


if __name__ == "__main__":
    main()
