"""miltext run against onnxruntime and torch eager on the same torch modules (a ResNet-18, a
GPT-2-small block, a 4-layer decoder of small ops; bench/interpreter_models.py), as a user runs
them: each engine in a process of its own (no library's idle threads take another's cores), at
1 and 2 threads, warm-up runs excluded, the processes taking turns in short slices so that each
cycle's ratios are paired measurements under the same load; medians, the ratios to onnxruntime
and torch, and each process's peak memory (VmHWM) beside the model's weights and largest
activation.

torch, onnx, onnxruntime and coremltools come from a venv of the benchmark's own,
bench/.venv-peers (made here on first use; never the test run's); miltext runs in .venv.

    .venv/bin/python bench/interpreter.py [--cycles 8] [--seconds 0.5] [--threads 1 2] [--models decoder]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PEERS = os.path.join(HERE, ".venv-peers")
PEER_PYTHON = os.path.join(PEERS, "bin", "python")
# torch==2.13.0 is the CPU build; plain `torch` would be a CUDA build of several GB
PEER_PACKAGES = ["torch==2.13.0", "onnx", "onnxscript", "onnxruntime", "coremltools==9.0", "threadpoolctl"]
ENGINES = ("miltext", "onnxruntime", "torch")
MODELS = ("resnet18", "gpt2_block", "decoder")


def ensure_peers() -> None:
    if os.path.exists(PEER_PYTHON):
        return
    print(f"== making {PEERS} (torch CPU, onnxruntime, coremltools: about 1 GB, a few minutes)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", PEERS], check=True)
    subprocess.run([PEER_PYTHON, "-m", "pip", "install", "--quiet", *PEER_PACKAGES], check=True)


def thread_env(threads: int) -> dict:
    """Every library's pool at `threads`; OpenBLAS left to pick its own kernel for this CPU
    (a forced core type or L2 size, set for the tests on some machines, would skew it)."""
    env = dict(os.environ)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[key] = str(threads)
    for key in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"):
        env.pop(key, None)
    return env


# ---- one engine in its own process -------------------------------------------------------
def peak_bytes(field: str = "VmHWM") -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field + ":"))


def reset_peak() -> int:
    """The high-water mark set back to what the process holds now (Linux); that amount."""
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    return peak_bytes("VmRSS")


# The most timed runs one slice makes, whatever --seconds asks (a decoder's run is ~0.3 ms).
MOST_ROUNDS = 20_000


def worker(engine: str, model: str, threads: int, warmup: int) -> None:
    """One engine's process: the model loaded and warmed up, then a slice of timed runs for
    each `run SECONDS ROUNDS` line on stdin (at least ROUNDS runs, on until they took SECONDS),
    answered with a line of JSON; at `end`, what it holds (peak memory, error, BLAS)."""
    import time

    import numpy as np
    sys.path.insert(0, HERE)
    sys.path.insert(0, ROOT)
    from interpreter_models import paths
    p = paths(model)
    data = np.load(p["data"])
    inputs = {k[3:]: data[k] for k in data.files if k.startswith("in_")}
    want = data["out_out"]
    # the high-water mark before the model is loaded, the engine's library imported
    __import__({"miltext": "miltext.interpreter.evaluator", "onnxruntime": "onnxruntime"}.get(engine, engine))
    base = peak_bytes()
    info = {}
    if engine == "miltext":
        import miltext
        from miltext.model.io import read_model
        m = read_model(p["mlpackage"])
        session = miltext.Session(m.program, weights=m.folder)
        step = lambda: next(iter(session.run(inputs, threads=threads).values()))     # noqa: E731
        start = time.perf_counter()
        miltext.run(m.program, inputs, weights=m.folder, threads=threads)
        info["one_shot"] = time.perf_counter() - start              # prepare and run, once
    elif engine == "onnxruntime":
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = ort.InferenceSession(p["onnx"], options, providers=["CPUExecutionProvider"])
        step = lambda: session.run(None, inputs)[0]                 # noqa: E731
    else:
        import torch
        torch.set_num_threads(threads)
        module = _eager(model)
        args = [torch.from_numpy(inputs[f"in{i}"]) for i in range(len(inputs))]

        def step():
            with torch.no_grad():
                return module(*args).numpy()
    held = reset_peak()             # the runs' own peak: values, and for miltext the weights it maps in
    for _ in range(warmup):
        got = step()
    info["run_peak"] = peak_bytes() - held
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = line.split()
        if command[0] != "run":
            break
        seconds, rounds = float(command[1]), int(command[2])
        times, cpu = [], []
        while len(times) < rounds or (sum(times) < seconds and len(times) < MOST_ROUNDS):
            start, start_cpu = time.perf_counter(), time.process_time()
            got = step()
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        print(json.dumps({"times": times, "cpu": cpu}), flush=True)
    if engine == "miltext":   # which BLAS kernel numpy runs: threadpoolctl from the peers' venv
        sys.path += [os.path.join(PEERS, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")]
    try:
        from threadpoolctl import threadpool_info
        info["blas"] = [f"{i.get('internal_api')} {i.get('architecture', '')} x{i.get('num_threads')}"
                        for i in threadpool_info()]
    except ImportError:
        pass
    info["error"] = float(np.abs(np.asarray(got, np.float64) - want).max() / max(np.abs(want).max(), 1e-6))
    print(json.dumps({"peak": peak_bytes(), "base": base, **info}), flush=True)


def _eager(model: str):
    """The torch module itself (eager, not the traced graph), with the fixture's weights."""
    import torch
    sys.path.insert(0, HERE)
    import interpreter_models
    torch.manual_seed(0)
    module, _ = getattr(interpreter_models, model)()
    traced = torch.jit.load(interpreter_models.paths(model)["torch"])
    module.load_state_dict(traced.state_dict())
    return module.eval()


def activation_sizes(model: str) -> tuple[int, int]:
    """The model's weight bytes and its largest activation (an op's output), from miltext's run
    with an observer."""
    import numpy as np
    sys.path.insert(0, ROOT)
    sys.path.insert(0, HERE)
    from interpreter_models import paths

    import miltext
    from miltext.model.io import read_model
    p = paths(model)
    m = read_model(p["mlpackage"])
    data = np.load(p["data"])
    largest = [0]

    def observe(function, path, op, values):
        if op.type != "const":
            largest[0] = max([largest[0]] + [v.nbytes for v in values.values() if isinstance(v, np.ndarray)])
    miltext.Session(m.program, weights=m.folder).run({k[3:]: data[k] for k in data.files if k.startswith("in_")},
                                                     observer=observe)
    folder = os.path.join(p["mlpackage"], "Data", "com.apple.CoreML", "weights")
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder)), largest[0]


# ---- the driver --------------------------------------------------------------------------
class Engine:
    """An engine's worker process for one model at one thread count, kept for the whole
    measurement: its slices of runs (`times`, `cpu`: each slice's list) and, once ended, what
    it reports of itself."""

    def __init__(self, engine: str, model: str, threads: int, warmup: int):
        self.name, self.times, self.cpu, self.report = engine, [], [], {}
        python = sys.executable if engine == "miltext" else PEER_PYTHON
        # stderr to a file: a pipe nobody reads would stop a worker that warns a lot
        self.errors = tempfile.TemporaryFile("w+")
        self.process = subprocess.Popen([python, os.path.abspath(__file__), "--worker", engine, model, str(threads),
                                         str(warmup)], env=thread_env(threads), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.errors, text=True)
        self._answer()          # loaded and warmed up

    def _answer(self) -> dict:
        line = self.process.stdout.readline()
        if not line:
            self.errors.seek(0)
            raise SystemExit(f"{self.name} failed:\n{self.errors.read()[-3000:]}")
        return json.loads(line)

    def slice(self, seconds: float, rounds: int) -> float:
        """A slice of timed runs; their median."""
        self.process.stdin.write(f"run {seconds} {rounds}\n")
        self.process.stdin.flush()
        got = self._answer()
        self.times.append(got["times"])
        self.cpu.append(got["cpu"])
        return statistics.median(got["times"])

    def end(self) -> None:
        self.process.stdin.write("end\n")
        self.process.stdin.flush()
        self.report = self._answer()
        self.process.wait()
        self.errors.close()

    def median(self, what: str = "times") -> float:
        return statistics.median(t for part in getattr(self, what) for t in part)


def quartiles(values: list) -> tuple:
    """The lower quartile, median and upper quartile of `values`."""
    if len(values) == 1:
        return values * 3
    low, mid, high = statistics.quantiles(values, n=4, method="inclusive")
    return low, mid, high


def median_interval(values: list, draws: int = 4000) -> tuple:
    """A 95% interval for the median of `values` (each cycle's): the 2.5th and 97.5th
    percentiles of the medians of `draws` resamplings of them, seeded (the same values give
    the same interval)."""
    import random
    pick = random.Random(0)
    medians = sorted(statistics.median(pick.choices(values, k=len(values))) for _ in range(draws))
    return medians[int(0.025 * draws)], medians[int(0.975 * draws) - 1]


def row(model: str, threads: int, engines: dict, paired: dict, weights: int, largest: int) -> str:
    """One line of the table: medians over every slice's runs, the median of the paired ratios
    (each cycle's slices, run within a second or two of each other) and their quartiles, peaks."""
    med = {e: engines[e].median() * 1e3 for e in ENGINES}
    mine = engines["miltext"].report
    peaks = "/".join(f"{(engines[e].report['peak'] - engines[e].report['base']) / 1e6:.0f}" for e in ENGINES)
    spreads = ["{:.2f}-{:.2f}".format(*quartiles(paired[p])[::2]) for p in ("onnxruntime", "torch")]
    return (f"{model:<11}{threads:>4}{med['miltext']:>11.2f}{med['onnxruntime']:>9.2f}{med['torch']:>9.2f}"
            f"{statistics.median(paired['onnxruntime']):>6.2f}x{statistics.median(paired['torch']):>6.2f}x"
            f"{mine['one_shot'] * 1e3:>12.1f}{peaks:>18}{mine['run_peak'] / 1e6:>9.1f}"
            f"{(weights + 2 * largest) / 1e6:>9.1f}{mine['error']:>9.1e}{spreads[0]:>12}{spreads[1]:>12}")


def cpu_row(model: str, threads: int, engines: dict) -> str:
    cpu = {e: engines[e].median("cpu") * 1e3 for e in ENGINES}
    return (f"{model:<11}{threads:>4}{cpu['miltext']:>11.2f}{cpu['onnxruntime']:>9.2f}"
            f"{cpu['torch']:>9.2f}{cpu['miltext'] / cpu['onnxruntime']:>6.2f}x"
            f"{cpu['miltext'] / cpu['torch']:>6.2f}x")


def measure(model: str, args) -> tuple[dict, dict]:
    """Every engine at every thread count, each a process of its own kept for the whole
    measurement, taking turns in short slices: `--cycles` cycles, each a slice of every
    process (the engines' order rotating, so none always runs first), a rest between slices
    for the last one's spinning threads to go quiet (onnxruntime's spin ~50 ms after a run,
    torch's and miltext's less). The machine's load drifts over seconds;
    a cycle's slices share it, so each cycle's ratios are paired measurements. Returns the
    engines ({threads: {engine: Engine}}) and the paired ratios ({threads: {peer: [a ratio
    each cycle]}})."""
    import time
    engines = {t: {e: Engine(e, model, t, args.warmup) for e in ENGINES} for t in args.threads}
    paired = {t: {p: [] for p in ENGINES[1:]} for t in args.threads}
    for cycle in range(args.cycles):
        for threads in args.threads:
            medians = {}
            for e in ENGINES[cycle % len(ENGINES):] + ENGINES[:cycle % len(ENGINES)]:
                time.sleep(args.rest)
                medians[e] = engines[threads][e].slice(args.seconds, args.rounds)
            for peer in ENGINES[1:]:
                paired[threads][peer].append(medians["miltext"] / medians[peer])
    for by_engine in engines.values():
        for engine in by_engine.values():
            engine.end()
    return engines, paired


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=8, help="cycles: a slice of runs of every engine at every thread count each")
    ap.add_argument("--rounds", type=int, default=3, help="timed runs a slice makes at least")
    ap.add_argument("--seconds", type=float, default=0.5,
                    help="and on until the slice's runs took this long (at most %d runs)" % MOST_ROUNDS)
    ap.add_argument("--rest", type=float, default=0.2, help="seconds between slices (the last engine's threads go quiet)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        engine, model, threads, warmup = args.worker
        worker(engine, model, int(threads), int(warmup))
        return
    if args.sizes:
        print(json.dumps(activation_sizes(args.sizes)))
        return
    ensure_peers()
    subprocess.run([PEER_PYTHON, os.path.join(HERE, "interpreter_models.py")], check=True,
                   env=thread_env(2), capture_output=True)
    print(f"load average at start: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    print(f"{'model':<11}{'thr':>4}{'miltext ms':>11}{'ort ms':>9}{'torch ms':>9}{'/ort':>7}{'/torch':>7}"
          f"{'one-shot ms':>12}{'peak MB m/o/t':>18}{'run peak':>9}{'w+2a MB':>9}{'max err':>9}"
          f"{'/ort IQR':>12}{'/torch IQR':>12}")
    cpu_rows, cycle_rows, scaling_rows = [], [], []
    for model in args.models:
        sizes = json.loads(subprocess.run([sys.executable, os.path.abspath(__file__), "--sizes", model],
                                          capture_output=True, text=True, check=True, env=thread_env(1)).stdout)
        weights, largest = sizes
        engines, paired = measure(model, args)
        for threads in args.threads:
            print(row(model, threads, engines[threads], paired[threads], weights, largest), flush=True)
            cpu_rows.append(cpu_row(model, threads, engines[threads]))
            cycle_rows.append(f"{model:<11}{threads:>4}  " + "  ".join(f"{r:.2f}" for r in paired[threads]["onnxruntime"]))
        if len(args.threads) > 1:
            first, last = args.threads[0], args.threads[-1]
            cells = []
            for peer in ENGINES[1:]:
                scaling = [b / a for a, b in zip(paired[first][peer], paired[last][peer])]
                low, mid, high = quartiles(scaling)
                pooled = ((engines[last]["miltext"].median() / engines[last][peer].median())
                          / (engines[first]["miltext"].median() / engines[first][peer].median()))
                cells.append(f"{mid:>8.2f} ({low:.2f}-{high:.2f}; {'{:.2f}-{:.2f}'.format(*median_interval(scaling))})"
                             f" {pooled:.2f}")
            scaling_rows.append(f"{model:<11}" + "".join(cells))
        blas = engines[args.threads[-1]]
        print(f"{'':<15}BLAS: miltext (numpy) {'; '.join(blas['miltext'].report.get('blas', []))}, "
              f"onnxruntime/torch: {'; '.join(blas['torch'].report.get('blas', []))}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\nCPU time (process_time; at one thread it leaves out the waits for a core a loaded machine adds):")
    print(f"{'model':<11}{'thr':>4}{'miltext ms':>11}{'ort ms':>9}{'torch ms':>9}{'/ort':>7}{'/torch':>7}")
    print("\n".join(cpu_rows))
    print("ms: medians over every slice's runs; /ort, /torch: the median of the paired ratios (each cycle's "
          "slices ran within seconds of each other, under the same load) and their quartiles (IQR); peak MB: "
          "each process's high-water mark less its own before loading the model (m/o/t: miltext, onnxruntime, "
          "torch); run peak: miltext's high-water mark over its warm-up runs less what it held before them (the "
          "weights it maps in count); w+2a: the model's weights + twice its largest activation")
    if scaling_rows:
        print(f"\nmiltext's ratio at {args.threads[-1]} threads over its ratio at {args.threads[0]} in the same cycle "
              "(below 1: miltext gains more from the threads than the peer): the median (quartiles; a 95% interval "
              "for the median, resampling the cycles), then the same of the medians over every slice's runs:")
        print(f"{'model':<11}{'vs onnxruntime':>36}{'vs torch':>36}")
        print("\n".join(scaling_rows))
    print("\nmiltext / onnxruntime in each cycle:")
    print("\n".join(cycle_rows))


if __name__ == "__main__":
    main()
