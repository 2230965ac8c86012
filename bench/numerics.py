"""What tracing and comparing cost on ResNet-50 (batch 1, 224x224, fp32): `run --trace` against
`run`, `compare` of two conversions against one `run`, and the peak memory of each against the
model's weights. Goals (issue 31): trace <= 1.5x run, compare <= 2.5x run, peak <= 3x weights.

The two conversions are made once into bench/.cache/numerics/ (git-ignored) by this file run
with torch and coremltools (`--make`, in build/fixtures-venv or bench/.venv-peers); the
measures run miltext from .venv, each command in a process of its own.

    build/fixtures-venv/bin/python bench/numerics.py --make
    .venv/bin/python bench/numerics.py
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CACHE = os.path.join(HERE, ".cache", "numerics")
MILTEXT = os.path.join(ROOT, ".venv", "bin", "miltext")


def resnet50():
    import torch
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers)


def make() -> None:
    import coremltools as ct
    import numpy as np
    import torch
    os.makedirs(CACHE, exist_ok=True)
    torch.manual_seed(0)
    module = resnet50().eval()
    x = np.random.default_rng(0).standard_normal((1, 3, 224, 224)).astype(np.float32)
    np.save(os.path.join(CACHE, "x.npy"), x)
    traced = torch.jit.trace(module, torch.from_numpy(x))
    for name in ("a", "b"):     # two conversions of one module
        model = ct.convert(traced, inputs=[ct.TensorType(name="x", shape=x.shape)], convert_to="mlprogram",
                           minimum_deployment_target=ct.target.iOS17, compute_precision=ct.precision.FLOAT32)
        model.save(os.path.join(CACHE, f"resnet50_{name}.mlpackage"))


def measure(args: list) -> tuple:
    """(seconds, peak RSS in bytes, exit status) of `miltext ARGS` in a process of its own."""
    start = time.perf_counter()
    proc = subprocess.Popen([MILTEXT, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode not in (0, 1):
        sys.exit(f"miltext {' '.join(args)} failed: {err}")
    return seconds, usage.ru_maxrss * 1024, proc.returncode


def weights_bytes(package: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(package)
               for f in files if f.endswith(".bin"))


def bench(rounds: int) -> None:
    a, b = (os.path.join(CACHE, f"resnet50_{n}.mlpackage") for n in ("a", "b"))
    if not os.path.isdir(b):
        sys.exit(f"no {b}: make the models first (see this file's docstring)")
    x = f"x={os.path.join(CACHE, 'x.npy')}"
    weights = weights_bytes(a)
    with tempfile.TemporaryDirectory() as tmp:
        commands = {
            "run": ["run", a, "-i", x, "-o", os.path.join(tmp, "out.npz")],
            "run --trace": ["run", a, "-i", x, "-o", os.path.join(tmp, "out2.npz"), "--trace", os.path.join(tmp, "t.npz")],
            "compare": ["compare", a, b, "-i", x],
        }
        best = {}
        for _ in range(rounds):
            for label, args in commands.items():
                seconds, peak, _ = measure(args)
                old = best.get(label)
                best[label] = (min(seconds, old[0]) if old else seconds, max(peak, old[1]) if old else peak)
        trace_size = os.path.getsize(os.path.join(tmp, "t.npz"))
    run_s = best["run"][0]
    print(f"ResNet-50 batch 1, weights {weights / 2**20:.0f} MiB, trace {trace_size / 2**20:.0f} MiB; best of {rounds}")
    for label, (seconds, peak) in best.items():
        print(f"  {label:<12} {seconds:6.2f} s  {seconds / run_s:4.2f}x run   peak {peak / 2**20:5.0f} MiB "
              f"{peak / weights:4.2f}x weights")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--make", action="store_true", help="make the two conversions (needs torch and coremltools)")
    ap.add_argument("--rounds", type=int, default=3)
    options = ap.parse_args()
    make() if options.make else bench(options.rounds)
