"""miltext run against torch eager: a ResNet-50 (batch 1, 224x224) and a GPT-2-style decoder (one
token after a 16-token prompt), each converted by coremltools and run by miltext's interpreter on
the same inputs, taking turns with torch; plus the interpreter's peak memory over the model's
weights. Needs torch and coremltools (a benchmark, not a test; the conversions are cached in
bench/out/interpreter/).

    python bench/interpreter.py [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
OUT = os.path.join(HERE, "out", "interpreter")


def resnet50():
    import torch
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, mid, stride):
            super().__init__()
            cout = mid * 4
            self.body = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                                      nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(),
                                      nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
    for mid, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(blocks):
            layers.append(Bottleneck(cin, mid, stride if i == 0 else 1))
            cin = mid * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(2048, 1000)]
    return nn.Sequential(*layers), (torch.rand(1, 3, 224, 224),)


def gpt2():
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads, self.d = heads, d
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, mask):
            t = x.shape[1]
            q, k, v = self.qkv(self.ln1(x)).reshape(1, t, 3, self.heads, self.d // self.heads).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) / (self.d // self.heads) ** 0.5 + mask, -1) @ v
            x = x + self.proj(a.transpose(1, 2).reshape(1, t, self.d))
            return x + self.out(torch.nn.functional.gelu(self.fc(self.ln2(x))))

    class Gpt2(nn.Module):
        def __init__(self, vocab=2048, d=256, heads=4, layers=6, t=17):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(1, t, d) * 0.02)
            self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)
            self.register_buffer("mask", torch.triu(torch.full((t, t), -1e4), 1))

        def forward(self, ids):
            x = self.tok(ids) + self.pos
            for b in self.blocks:
                x = b(x, self.mask)
            return self.head(self.ln(x[:, -1:]))      # the next token's logits

    return Gpt2(), (torch.randint(0, 2048, (1, 17)),)


def converted(name, make):
    """The torch module, its inputs and the path of its conversion (made once)."""
    import coremltools as ct
    import torch
    torch.manual_seed(0)
    module, example = make()
    module.eval()
    path = os.path.join(OUT, name + ".mlpackage")
    if not os.path.exists(path):
        os.makedirs(OUT, exist_ok=True)
        traced = torch.jit.trace(module, example)
        inputs = [ct.TensorType(name=f"in{i}", shape=e.shape, dtype=np.int32 if e.dtype == torch.int64 else np.float32)
                  for i, e in enumerate(example)]
        ct.convert(traced, inputs=inputs, compute_precision=ct.precision.FLOAT32,
                   minimum_deployment_target=ct.target.iOS17).save(path)
    return module, example, path


MEASURE = """
import resource, sys, numpy as np
sys.path.insert(0, sys.argv[1])
from miltext.model.io import read_model
import miltext
model = read_model(sys.argv[2])
data = np.load(sys.argv[3])
miltext.run(model.program, {k: data[k] for k in data.files}, weights=model.folder)
# VmHWM is this process's own high-water mark; ru_maxrss would also count the torch parent
# it was forked from (Linux keeps the parent's peak across exec)
try:
    with open("/proc/self/status") as f:
        print(next(int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:")))
except OSError:
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)
"""


def weights_bytes(path: str) -> int:
    folder = os.path.join(path, "Data", "com.apple.CoreML", "weights")
    return sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import torch
    import miltext
    from miltext.model.io import read_model
    torch.set_num_threads(os.cpu_count() or 1)
    print(f"{'model':<10} {'miltext s':>10} {'torch s':>9} {'ratio':>7} {'peak MB':>8} {'weights MB':>10} {'peak/weights':>12}")
    for name, make in (("resnet50", resnet50), ("gpt2", gpt2)):
        module, example, path = converted(name, make)
        model = read_model(path)
        inputs = {f"in{i}": e.numpy().astype(np.int32 if e.dtype == torch.int64 else np.float32) for i, e in enumerate(example)}
        ours, theirs = [], []
        for _ in range(args.rounds):             # taking turns: the machine's speed drifts
            start = time.perf_counter()
            got = miltext.run(model.program, inputs, weights=model.folder)
            ours.append(time.perf_counter() - start)
            start = time.perf_counter()
            with torch.no_grad():
                want = module(*example)
            theirs.append(time.perf_counter() - start)
        out = next(iter(got.values()))
        err = float(np.abs(out - want.numpy()).max() / np.abs(want.numpy()).max())
        npz = os.path.join(OUT, name + "_inputs.npz")
        np.savez(npz, **inputs)
        peak = int(subprocess.run([sys.executable, "-c", MEASURE, os.path.dirname(HERE), path, npz],
                                  capture_output=True, text=True, check=True).stdout)
        w = weights_bytes(path)
        m, t = statistics.median(ours), statistics.median(theirs)
        print(f"{name:<10} {m:>10.3f} {t:>9.3f} {m / t:>6.1f}x {peak / 1e6:>8.0f} {w / 1e6:>10.0f} {peak / w:>11.1f}x"
              f"   (max error {err:.2g} of the scale)")


if __name__ == "__main__":
    main()
