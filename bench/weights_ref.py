"""Peak memory of building a model from a large safetensors checkpoint, against its size.

A checkpoint of fp32 matrices (1 GB by default) is written to bench/out/, with a hand-written
model whose consts name them (`safetensors("ckpt.safetensors", "layers.N.weight", from=fp32)`,
cast to fp16, and the same as fp32). `miltext build` runs in a fresh process whose peak resident
memory (ru_maxrss) is read; the alternative, loading the checkpoint whole with
`safetensors.numpy.load_file` as a script would before handing arrays to a builder, runs the
same way. Streaming means the build's peak stays far under the checkpoint's size.

    python bench/weights_ref.py [--gb 1.0]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "out", "weights_ref")
DIM = 4096                                   # each matrix DIM x DIM fp32: 64 MiB

MEASURE = """
import resource, subprocess, sys
run = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024, run.returncode)
"""
LOAD_WHOLE = "import sys; from safetensors.numpy import load_file; sum(a.nbytes for a in load_file(sys.argv[1]).values())"


def make_checkpoint(path: str, layers: int) -> None:
    """`layers` fp32 matrices, written one at a time (safetensors' writer takes a dict: a few
    files of a few tensors each would do the same; one file is the usual checkpoint)."""
    from safetensors.numpy import save_file
    rng = np.random.default_rng(0)
    tensors = {f"layers.{i}.weight": rng.standard_normal((DIM, DIM), dtype=np.float32) for i in range(layers)}
    save_file(tensors, path)


def model_text(layers: int, dtype: str) -> str:
    cast = ", from=fp32" if dtype != "fp32" else ""
    lines = [f"main[CoreML7](%x: (1, {DIM}, {dtype})) {{", "  block0() {"]
    x = "%x"
    for i in range(layers):
        lines.append(f'    %w{i} = const(val=({DIM}, {DIM}, {dtype})(safetensors("ckpt.safetensors", "layers.{i}.weight"{cast})))')
        lines.append(f"    %y{i} = linear(x={x}, weight=%w{i})")
        x = f"%y{i}"
    return "\n".join(lines + [f"  }} -> ({x})", "}"]) + "\n"


def peak(*args) -> tuple[int, float]:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", MEASURE, *args], capture_output=True, text=True, check=True, cwd=OUT)
    rss, status = out.stdout.split()
    assert status == "0", f"{' '.join(args)} failed"
    return int(rss), time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gb", type=float, default=1.0, help="checkpoint size in GB (default 1)")
    args = parser.parse_args()
    layers = max(1, round(args.gb * 1e9 / (DIM * DIM * 4)))
    os.makedirs(OUT, exist_ok=True)
    ckpt = os.path.join(OUT, "ckpt.safetensors")
    make_checkpoint(ckpt, layers)
    size = os.path.getsize(ckpt)
    print(f"checkpoint: {layers} x ({DIM}, {DIM}) fp32, {size / 1e9:.2f} GB")
    whole, t_whole = peak(sys.executable, "-c", LOAD_WHOLE, "ckpt.safetensors")
    print(f"  load_file (the whole checkpoint in memory): peak {whole / 1e6:7.0f} MB = {whole / size:.2f} x checkpoint, {t_whole:.1f} s")
    for dtype in ("fp16", "fp32"):
        with open(os.path.join(OUT, f"model_{dtype}.mil"), "w") as f:
            f.write(model_text(layers, dtype))
        rss, t = peak(sys.executable, "-m", "miltext.cli", "build", f"model_{dtype}.mil", "-o", f"M_{dtype}.mlpackage")
        weights = os.path.getsize(os.path.join(OUT, f"M_{dtype}.mlpackage", "Data", "com.apple.CoreML", "weights", "weight.bin"))
        print(f"  miltext build, {dtype} weights ({weights / 1e9:.2f} GB written): peak {rss / 1e6:7.0f} MB = "
              f"{rss / size:.3f} x checkpoint = {rss / whole:.3f} x load_file, {t:.1f} s")
        shutil.rmtree(os.path.join(OUT, f"M_{dtype}.mlpackage"))


if __name__ == "__main__":
    main()
