"""Benchmark miltext's text <-> proto conversions against coremltools and raw protobuf.

A benchmark, not a test: it prints timings and the ratios the project aims for, and never
fails on a missed target. Run from anywhere: `python bench/run.py [--quick] [--json FILE]`.
See bench/README.md for what each number means.
"""
from __future__ import annotations

import argparse
import gc
import hashlib
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO))  # benchmark the source tree, not an installed miltext

import programs  # noqa: E402  (bench/programs.py: the script's directory is on sys.path)

import miltext  # noqa: E402
from miltext.proto import schema  # noqa: E402  (miltext's private-pool Program class)

OUT = BENCH / "out"
TRANSFORMER_SIZES = (10_000, 50_000)
BIG_CONST_ELEMENTS = 1_000_000


# ---- timing ---------------------------------------------------------------------------------------

@dataclass
class Timing:
    median: float
    min: float
    reps: int


def time_it(fn, reps: int) -> tuple[Timing, object]:
    """Median wall time of `reps` calls, and the last result. Garbage is collected before each
    call (so one rep does not pay for the last one's garbage) but the collector stays on
    during it: users run with it on, and it is part of what building big object graphs costs."""
    timings, results = time_rounds({"step": lambda r: fn()}, reps)
    return timings["step"], results["step"]


def time_rounds(steps: dict, reps: int) -> tuple[dict, dict]:
    """Each step once per round, `reps` rounds; the median and best time of each, and the
    results of the last round. A step is called with the round's results so far, so it can work
    on an earlier step's output. Taking turns, rather than timing one step `reps` times and then
    the next, puts every step under the same machine load: a shared machine's speed drifts
    over a run by more than the differences measured here."""
    samples = {name: [] for name in steps}
    results: dict = {}
    for _ in range(reps):
        results = {}
        for name, fn in steps.items():
            gc.collect()
            start = time.perf_counter()
            results[name] = fn(results)
            samples[name].append(time.perf_counter() - start)
    return {name: Timing(statistics.median(xs), min(xs), reps) for name, xs in samples.items()}, results


# ---- programs, built once and cached in bench/out/ -------------------------------------------------

def _generator_fingerprint() -> str:
    """Changes whenever programs.py does, so an edited generator never serves stale files."""
    return hashlib.sha256(Path(programs.__file__).read_bytes()).hexdigest()[:16]


def cached_program(name: str, build, rebuild: bool) -> tuple[bytes, dict]:
    """The proto bytes of program `name`, from bench/out/ when the cache matches the generator
    (and the source it would be built from today), else built by `build()` and stored."""
    OUT.mkdir(exist_ok=True)
    pb_path, meta_path = OUT / f"{name}.pb", OUT / f"{name}.json"
    want = {"fingerprint": _generator_fingerprint(), "coremltools": programs.have_coremltools()}
    if not rebuild and pb_path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if {k: meta.get(k) for k in want} == want:
            return pb_path.read_bytes(), {**meta, "cached": True}
    start = time.perf_counter()
    pb, how = build()
    meta = {**want, "source": how, "build_seconds": round(time.perf_counter() - start, 3),
            "ops": programs.op_count(pb), "proto_bytes": len(pb)}
    pb_path.write_bytes(pb)
    meta_path.write_text(json.dumps(meta, indent=2))
    return pb, {**meta, "cached": False}


def load_programs(sizes, rebuild: bool) -> dict[str, tuple[bytes, dict]]:
    progs = {}
    for n in sizes:
        progs[f"transformer_{n // 1000}k"] = cached_program(
            f"transformer_{n}", lambda n=n: programs.transformer_proto(n), rebuild)
    if programs.have_coremltools():  # a converted model's layout: coremltools' exporter writes it
        n = sizes[0]
        folder = OUT / f"weights_file_{n}"
        folder.mkdir(parents=True, exist_ok=True)
        pb, meta = cached_program(f"weights_file_{n}", lambda: programs.weights_in_a_file_proto(n, str(folder)),
                                  rebuild or not (folder / "weight.bin").exists())
        progs[f"weights_file_{n // 1000}k"] = pb, {**meta, "weights_dir": str(folder)}
    progs["const_1M"] = cached_program(
        f"const_{BIG_CONST_ELEMENTS}", lambda: programs.big_const_proto(BIG_CONST_ELEMENTS), rebuild)
    return progs


# ---- the measured steps ------------------------------------------------------------------------

def bench_program(pb: bytes, reps: int, with_coremltools: bool, weights_dir: str = "") -> tuple[dict, dict]:
    """miltext both ways, whole and split into halves (to show where time goes), the protobuf
    parse baseline and, when installed, coremltools' proto -> pymil loader and its print, all
    taking turns (time_rounds). Also checks the round trip is exact, since a fast wrong answer
    would make the numbers meaningless.

    coremltools' loader takes a parsed MIL_pb2.Program: the parse is the 'protobuf parse' row."""
    steps = {
        "protobuf parse": lambda r: schema.Program.FromString(pb),
        "miltext proto->text": lambda r: miltext.proto_to_text(pb),
        "  decode (proto->objects)": lambda r: miltext.Program.from_proto(pb),
        "  print (objects->text)": lambda r: miltext.dumps(r["  decode (proto->objects)"]),
        "miltext text->proto": lambda r: miltext.loads(r["miltext proto->text"]).to_bytes(),
        "  parse (text->objects)": lambda r: miltext.loads(r["miltext proto->text"]),
        "  encode (objects->bytes)": lambda r: r["  parse (text->objects)"].to_bytes(),
        "  to_proto().SerializeToString()": lambda r: r["  parse (text->objects)"].to_proto().SerializeToString(
            deterministic=True),
    }
    if with_coremltools:
        from coremltools.converters.mil.frontend.milproto.load import load_mil_proto
        from coremltools.proto import MIL_pb2
        msg = MIL_pb2.Program.FromString(pb)
        steps["coremltools load (proto->pymil)"] = lambda r: load_mil_proto(msg, programs.SPEC_VERSION, weights_dir)
        steps["coremltools print str(prog)"] = lambda r: str(r["coremltools load (proto->pymil)"])
    t, r = time_rounds(steps, reps)
    text = r["miltext proto->text"]
    facts = {"text_chars": len(text), "round_trip_exact": r["miltext text->proto"] == pb
             and r["  to_proto().SerializeToString()"] == pb,
             "native_encoder": native_encoder_used(r["  parse (text->objects)"]),
             "native_printer": native_printer_used(pb),
             "native_text_equals_python_text": text == r["  print (objects->text)"]}
    if with_coremltools:
        facts["coremltools_text_chars"] = len(r["coremltools print str(prog)"])
    return t, facts


def native_printer_built() -> bool:
    from miltext.text.mil import fastprint
    return fastprint.available()


def native_encoder_built() -> bool:
    from miltext.ir import fastencode
    return fastencode.available()


def native_encoder_used(program) -> bool:
    """Whether text->proto's encoding took the native encoder (built, enabled, able)."""
    from miltext.ir import fastencode
    return fastencode.program_bytes(program) is not None


def native_printer_used(pb: bytes) -> bool:
    """Whether proto->text took the native printer (built, enabled and able to print this)."""
    from miltext.text.mil import fastprint
    return fastprint.program_text(pb) is not None


# ---- import cost, in fresh interpreters ------------------------------------------------------------

_MODULE_PROBE = ("import json, sys, miltext; print(json.dumps({m: m in sys.modules for m in "
                 "('coremltools', 'lark', 'google.protobuf', 'numpy')}))")
_FIRST_USE_PROBE = """
import time; t0 = time.perf_counter()
import miltext; t1 = time.perf_counter()
p = miltext.loads('main[CoreML7](%x: (2, 4, fp32)) {\\n  block0() {\\n    %y: (2, 4, fp32) = relu(x=%x, name="y")\\n  } -> (%y)\\n}\\n'); t2 = time.perf_counter()
miltext.dumps(p); p.to_proto(); t3 = time.perf_counter()
print(t1 - t0, t2 - t1, t3 - t2)
"""


def _python(*args: str) -> subprocess.CompletedProcess:
    """Run the venv's python on the source tree. Bytecode is cached under bench/out/pycache
    (PYTHONPYCACHEPREFIX), so imports are timed as an installed package would import, without
    writing __pycache__ into the source tree, even where PYTHONDONTWRITEBYTECODE is set."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(REPO), PYTHONPYCACHEPREFIX=str(OUT / "pycache"))
    return subprocess.run([sys.executable, *args], cwd=REPO, env=env, capture_output=True,
                          text=True, check=True)


def _wall(args, reps: int) -> float:
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        _python(*args)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def _importtime_s(reps: int, modules=("miltext", "numpy")) -> dict:
    """Cumulative import time of each top-level module, as `python -X importtime` reports it."""
    found = {m: [] for m in modules}
    for _ in range(reps):
        for line in _python("-X", "importtime", "-c", "import miltext").stderr.splitlines():
            fields = [f.strip() for f in line.split("|")]
            if len(fields) == 3 and fields[2] in found:
                found[fields[2]].append(int(fields[1]) / 1e6)
    return {m: statistics.median(v) if v else 0.0 for m, v in found.items()}


def measure_import(reps: int) -> dict:
    """What `import miltext` costs a fresh process, what it drags in, and the first-use cost
    (building the parser) that a lazy import moves to the first loads()."""
    _python("-c", _FIRST_USE_PROBE)  # warm the bytecode cache
    bare, with_import = _wall(["-c", "pass"], reps), _wall(["-c", "import miltext"], reps)
    firsts = [list(map(float, _python("-c", _FIRST_USE_PROBE).stdout.split())) for _ in range(reps)]
    import_s, first_loads_s, first_dump_s = (statistics.median(col) for col in zip(*firsts))
    cumulative = _importtime_s(reps)
    return {"python_startup_s": bare, "python_with_import_s": with_import,
            "import_wall_s": with_import - bare, "importtime_cumulative_s": cumulative["miltext"],
            "importtime_numpy_s": cumulative["numpy"],
            "in_process_import_s": import_s, "first_loads_s": first_loads_s,
            "first_dumps_and_to_proto_s": first_dump_s,
            "modules_after_import": json.loads(_python("-c", _MODULE_PROBE).stdout)}


# ---- report --------------------------------------------------------------------------------------

@dataclass
class Ratio:
    name: str
    value: float | None
    target: str
    ok: bool | None


def ratios(t: dict) -> list[Ratio]:
    """The ratios the project promises, from whatever was measured (None when a side is missing)."""
    def r(a, b):
        return t[a].median / t[b].median if a in t and b in t else None

    def check(name, value, target, ok):
        return Ratio(name, value, target, None if value is None else ok(value))

    def against_coremltools(program, label):
        return [check(f"text->proto({label}) / coremltools load",
                      r((program, "miltext text->proto"), (program, "coremltools load (proto->pymil)")),
                      "<= 0.25", lambda v: v <= 0.25),
                check(f"proto->text({label}) / coremltools print",
                      r((program, "miltext proto->text"), (program, "coremltools print str(prog)")),
                      "<= 1.0", lambda v: v <= 1.0)]

    return [
        *against_coremltools("transformer_10k", "10k"),
        *against_coremltools("weights_file_10k", "10k, weights in a file"),
        check("text->proto(1M const) / protobuf parse(1M const)",
              r(("const_1M", "miltext text->proto"), ("const_1M", "protobuf parse")),
              "<= 50", lambda v: v <= 50),
        check("text->proto 50k / 10k",
              r(("transformer_50k", "miltext text->proto"), ("transformer_10k", "miltext text->proto")),
              "~5 (<= 6)", lambda v: v <= 6),
        check("proto->text 50k / 10k",
              r(("transformer_50k", "miltext proto->text"), ("transformer_10k", "miltext proto->text")),
              "~5 (<= 6)", lambda v: v <= 6),
    ]


def _fmt_s(seconds: float) -> str:
    return f"{seconds * 1e3:10.1f} ms" if seconds < 10 else f"{seconds:10.2f} s "


def print_report(progs: dict, timings: dict, facts: dict, rs: list[Ratio], imp: dict | None) -> None:
    print("\nPrograms")
    for name, (pb, meta) in progs.items():
        cached = "cached" if meta["cached"] else f"built in {meta['build_seconds']:.1f} s"
        print(f"  {name:16} {meta['ops']:>7} ops  {len(pb) / 1e6:7.2f} MB proto  "
              f"{facts[name]['text_chars'] / 1e6:7.2f} MB text  source: {meta['source']} ({cached})")
    print(f"\n{'program':16} {'step':34} {'median':>13} {'min':>13}  reps")
    for (name, step), t in timings.items():
        print(f"{name:16} {step:34} {_fmt_s(t.median)} {_fmt_s(t.min)}  {t.reps}")
    print("\nChecks")
    for name, f in facts.items():
        ct_chars = f.get("coremltools_text_chars")
        extra = f", coremltools print {ct_chars / 1e6:.2f} MB text" if ct_chars is not None else ""
        print(f"  {name:16} round trip proto->text->proto exact: {f['round_trip_exact']}{extra}")
        print(f"  {'':16} native printer used: {f['native_printer']}, its text equals the "
              f"pure-Python printer's: {f['native_text_equals_python_text']}; "
              f"native encoder used: {f['native_encoder']}")
    print(f"\n{'ratio':58} {'value':>8}  {'target':12} met")
    for r in rs:
        value = "n/a" if r.value is None else f"{r.value:8.3f}"
        met = {None: "-", True: "yes", False: "NO"}[r.ok]
        print(f"{r.name:58} {value:>8}  {r.target:12} {met}")
    if imp:
        print("\nimport miltext (fresh interpreter, medians)")
        print(f"  wall time added to `python -c pass`: {imp['import_wall_s'] * 1e3:7.1f} ms "
              f"(python alone {imp['python_startup_s'] * 1e3:.1f} ms)")
        print(f"  -X importtime cumulative:            {imp['importtime_cumulative_s'] * 1e3:7.1f} ms "
              f"(of which numpy {imp['importtime_numpy_s'] * 1e3:.1f} ms)")
        print(f"  first loads() of a 1-op program:     {imp['first_loads_s'] * 1e3:7.1f} ms "
              "(builds the parser)")
        print(f"  first dumps() + to_proto():          {imp['first_dumps_and_to_proto_s'] * 1e3:7.1f} ms")
        mods = imp["modules_after_import"]
        verdict = "OK, not imported" if not mods["coremltools"] else "PROBLEM: imported"
        print(f"  coremltools in sys.modules after import miltext: {mods['coremltools']} ({verdict})")
        print("  also imported: " + ", ".join(f"{m}={v}" for m, v in mods.items() if m != "coremltools"))


def environment() -> dict:
    """Versions and conditions that move the numbers: which miltext (commit, local edits), the
    protobuf backend (upb vs pure Python differ ~10x), and how busy the machine was."""
    import google.protobuf
    from google.protobuf.internal import api_implementation
    env = {"python": sys.version.split()[0], "platform": platform.platform(), "cpus": os.cpu_count(),
           "load_average_1min": os.getloadavg()[0], "miltext": miltext.__version__,
           "miltext_commit": _git("rev-parse", "--short", "HEAD"),
           "miltext_uncommitted_changes": bool(_git("status", "--porcelain", "--", "miltext", "grammar")),
           "protobuf": f"{google.protobuf.__version__} ({api_implementation.Type()})",
           "native_printer_built": native_printer_built(), "native_encoder_built": native_encoder_built()}
    for dist in ("lark", "numpy", "coremltools"):
        try:
            env[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            env[dist] = None
    return env


def _git(*args: str) -> str | None:
    """Read-only git queries; None outside a checkout or without git."""
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


# ---- main ----------------------------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="only the 10k program, fewer repetitions")
    p.add_argument("--json", metavar="FILE", help="also write all results to FILE as JSON")
    p.add_argument("--rebuild", action="store_true", help="regenerate the programs in bench/out/")
    p.add_argument("--no-import", action="store_true", help="skip the fresh-interpreter import timing")
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    reps = 3 if args.quick else 5
    sizes = TRANSFORMER_SIZES[:1] if args.quick else TRANSFORMER_SIZES
    env = environment()
    print("environment: " + ", ".join(f"{k} {v}" for k, v in env.items()))
    print("protobuf parse row: miltext.proto.schema.Program.FromString (miltext's private pool)")

    progs = load_programs(sizes, args.rebuild)
    with_ct = programs.have_coremltools()
    timings, facts = {}, {}
    for name, (pb, meta) in progs.items():
        print(f"timing {name} ...", file=sys.stderr, flush=True)
        t, facts[name] = bench_program(pb, reps, with_ct, meta.get("weights_dir", ""))
        timings.update({(name, step): v for step, v in t.items()})

    rs = ratios(timings)
    imp = None if args.no_import else measure_import(3 if args.quick else 5)
    print_report(progs, timings, facts, rs, imp)

    if args.json:
        Path(args.json).write_text(json.dumps({
            "environment": env,
            "programs": {n: meta for n, (_, meta) in progs.items()},
            "timings": [{"program": n, "step": s.strip(), **asdict(t)} for (n, s), t in timings.items()],
            "facts": facts, "ratios": [asdict(r) for r in rs], "import": imp,
        }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
