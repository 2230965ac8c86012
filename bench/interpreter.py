"""miltext run against onnxruntime and torch eager on the same torch modules (a ResNet-18, a
GPT-2-small block, a 4-layer decoder of small ops; bench/interpreter_models.py), as a user runs
them: each engine in a process of its own (no library's idle threads take another's cores), at
1 and 2 threads, warm-up runs excluded; medians, the ratios to onnxruntime and torch, and each
process's peak memory (VmHWM) beside the model's weights and largest activation.

torch, onnx, onnxruntime and coremltools come from a venv of the benchmark's own,
bench/.venv-peers (made here on first use; never the test run's); miltext runs in .venv.

    .venv/bin/python bench/interpreter.py [--rounds 10] [--seconds 1] [--repeat 1] [--threads 1 2] [--models decoder]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

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


# The most timed runs a process makes, whatever --seconds asks (a decoder's run is ~0.3 ms).
MOST_ROUNDS = 20_000


def worker(engine: str, model: str, threads: int, rounds: int, warmup: int, seconds: float) -> dict:
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
        step = lambda: next(iter(session.run(inputs).values()))     # noqa: E731
        start = time.perf_counter()
        miltext.run(m.program, inputs, weights=m.folder)
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
    times, cpu = [], []
    # at least `rounds` runs, and on until they took `seconds`: a small model's median is then
    # of thousands of runs, not of a few milliseconds a passing load can fill
    while len(times) < rounds or (sum(times) < seconds and len(times) < MOST_ROUNDS):
        start, start_cpu = time.perf_counter(), time.process_time()
        got = step()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    if engine == "miltext":   # which BLAS kernel numpy runs: threadpoolctl from the peers' venv
        sys.path += [os.path.join(PEERS, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}", "site-packages")]
    try:
        from threadpoolctl import threadpool_info
        info["blas"] = [f"{i.get('internal_api')} {i.get('architecture', '')} x{i.get('num_threads')}"
                        for i in threadpool_info()]
    except ImportError:
        pass
    err = float(np.abs(np.asarray(got, np.float64) - want).max() / max(np.abs(want).max(), 1e-6))
    return {"times": times, "cpu": cpu, "peak": peak_bytes(), "base": base, "error": err, **info}


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
def measure(engine: str, model: str, threads: int, rounds: int, warmup: int, seconds: float) -> dict:
    python = sys.executable if engine == "miltext" else PEER_PYTHON
    out = subprocess.run([python, os.path.abspath(__file__), "--worker", engine, model, str(threads),
                          str(rounds), str(warmup), str(seconds)], env=thread_env(threads), capture_output=True,
                         text=True)
    if out.returncode:
        raise SystemExit(f"{engine} on {model} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def spread(each: dict, peer: str) -> str:
    """The lowest and highest ratio of miltext's median to `peer`'s over the repeats, each
    repeat's processes taken together (a ratio of medians across the turns hides the drift)."""
    ratios = [m / p for m, p in zip(each["miltext"], each[peer])]
    return f"{min(ratios):.2f}-{max(ratios):.2f}"


def row(model: str, threads: int, got: dict, each: dict, weights: int, largest: int) -> str:
    """One line of the table: medians over every process's runs, their ratios, peaks, the spread."""
    med = {e: statistics.median(r["times"]) * 1e3 for e, r in got.items()}
    peaks = "/".join(f"{(r['peak'] - r['base']) / 1e6:.0f}" for r in got.values())
    return (f"{model:<11}{threads:>4}{med['miltext']:>11.2f}{med['onnxruntime']:>9.2f}{med['torch']:>9.2f}"
            f"{med['miltext'] / med['onnxruntime']:>6.2f}x{med['miltext'] / med['torch']:>6.2f}x"
            f"{got['miltext']['one_shot'] * 1e3:>12.1f}{peaks:>18}{got['miltext']['run_peak'] / 1e6:>9.1f}"
            f"{(weights + 2 * largest) / 1e6:>9.1f}"
            f"{got['miltext']['error']:>9.1e}{spread(each, 'onnxruntime'):>12}{spread(each, 'torch'):>12}")


def cpu_row(model: str, threads: int, got: dict) -> str:
    cpu = {e: statistics.median(r["cpu"]) * 1e3 for e, r in got.items()}
    return (f"{model:<11}{threads:>4}{cpu['miltext']:>11.2f}{cpu['onnxruntime']:>9.2f}"
            f"{cpu['torch']:>9.2f}{cpu['miltext'] / cpu['onnxruntime']:>6.2f}x"
            f"{cpu['miltext'] / cpu['torch']:>6.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10, help="timed runs per process")
    ap.add_argument("--repeat", type=int, default=1, help="turns: a process of every engine at every thread count each")
    ap.add_argument("--seconds", type=float, default=1.0,
                    help="and on until the timed runs took this long (at most %d runs)" % MOST_ROUNDS)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", default=list(MODELS), choices=MODELS)
    ap.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        engine, model, threads, rounds, warmup, seconds = args.worker
        print(json.dumps(worker(engine, model, int(threads), int(rounds), int(warmup), float(seconds))))
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
          f"{'/ort each':>12}{'/torch each':>12}")
    cpu_rows, turn_rows = [], []
    for model in args.models:
        sizes = json.loads(subprocess.run([sys.executable, os.path.abspath(__file__), "--sizes", model],
                                          capture_output=True, text=True, check=True, env=thread_env(1)).stdout)
        weights, largest = sizes
        got = {t: {} for t in args.threads}
        each = {t: {e: [] for e in ENGINES} for t in args.threads}
        # the engines' processes take turns, and so do the thread counts: the load drifts, and
        # both counts' ratios are measured under the same drift; each turn starts with another
        # engine, so none always runs first (after the last turn's processes let go of memory)
        for turn in range(args.repeat):
            for threads in args.threads:
                for e in ENGINES[turn % len(ENGINES):] + ENGINES[:turn % len(ENGINES)]:
                    r = measure(e, model, threads, args.rounds, args.warmup, args.seconds)
                    each[threads][e].append(statistics.median(r["times"]))
                    kept = got[threads].get(e)
                    if kept is not None:
                        r["times"] += kept["times"]
                        r["cpu"] += kept["cpu"]
                        for key in ("peak", "run_peak", "one_shot"):
                            if key in r:
                                r[key] = max(r[key], kept[key])
                    got[threads][e] = r
        for threads in args.threads:
            print(row(model, threads, got[threads], each[threads], weights, largest), flush=True)
            cpu_rows.append(cpu_row(model, threads, got[threads]))
            turn_rows.append(f"{model:<11}{threads:>4}  " + "  ".join(
                f"{m / o:.2f}" for m, o in zip(each[threads]["miltext"], each[threads]["onnxruntime"])))
        last = got[args.threads[-1]]
        print(f"{'':<15}BLAS: miltext (numpy) {'; '.join(last['miltext'].get('blas', []))}, "
              f"onnxruntime/torch: {'; '.join(last['torch'].get('blas', []))}")
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("\nCPU time (process_time; at one thread it leaves out the waits for a core a loaded machine adds):")
    print(f"{'model':<11}{'thr':>4}{'miltext ms':>11}{'ort ms':>9}{'torch ms':>9}{'/ort':>7}{'/torch':>7}")
    print("\n".join(cpu_rows))
    print("peak MB: each process's high-water mark less its own before loading the model (m/o/t: miltext, "
          "onnxruntime, torch); run peak: miltext's high-water mark over its runs less what it held before "
          "them (the weights it maps in count); w+2a: the model's weights + twice its largest activation; "
          "/ort each, /torch each: the lowest and highest ratio of one repeat's processes (how far the load moved it)")
    print("\nmiltext / onnxruntime in each turn (a turn's processes ran within seconds of each other):")
    print("\n".join(turn_rows))


if __name__ == "__main__":
    main()
