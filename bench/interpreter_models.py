"""The models bench/interpreter.py measures, made once into bench/.cache/interpreter/ (git-ignored):
each torch module with fixed seeds, exported to ONNX (for onnxruntime) and converted by
coremltools to an .mlpackage (for miltext), beside NAME.npz holding the inputs (`in_*`) and
torch's outputs (`out_*`). Runs in the benchmark's own environment (torch, onnx, coremltools:
bench/.venv-peers, which bench/interpreter.py makes), never the test run's.

    bench/.venv-peers/bin/python bench/interpreter_models.py [--force]
"""
from __future__ import annotations

import argparse
import os
import shutil

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.join(HERE, ".cache", "interpreter")
NAMES = ("resnet18", "gpt2_block", "decoder")


def resnet18():
    """ResNet-18 (basic blocks 2-2-2-2, full width), batch 1, 224x224."""
    import torch
    from torch import nn

    class Basic(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                                      nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)], 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Basic(cin, cout, stride), Basic(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers), (torch.rand(1, 3, 224, 224),)


def _block_class():
    import torch
    from torch import nn

    class Block(nn.Module):
        """A pre-LayerNorm GPT-2 block: causal attention by matmul and softmax, exact-GELU MLP."""

        def __init__(self, d, heads, t):
            super().__init__()
            self.heads, self.d, self.t = heads, d, t
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
            self.register_buffer("mask", torch.triu(torch.full((t, t), -1e4), 1))

        def forward(self, x):
            t, dh = self.t, self.d // self.heads
            q, k, v = self.qkv(self.ln1(x)).reshape(1, t, 3, self.heads, dh).permute(2, 0, 3, 1, 4)
            a = torch.softmax(q @ k.transpose(-1, -2) / dh ** 0.5 + self.mask, -1) @ v
            x = x + self.proj(a.transpose(1, 2).reshape(1, t, self.d))
            return x + self.out(nn.functional.gelu(self.fc(self.ln2(x))))

    return Block


def gpt2_block():
    """One GPT-2-small block (d 768, 12 heads) on 128 tokens."""
    import torch
    return _block_class()(768, 12, 128), (torch.randn(1, 128, 768),)


def decoder():
    """A 4-layer decoder of small ops (d 64, 4 heads, 16 tokens, vocab 512): op overhead, not
    arithmetic, is what it measures."""
    import torch
    from torch import nn
    Block = _block_class()

    class Decoder(nn.Module):
        def __init__(self, vocab=512, d=64, heads=4, layers=4, t=16):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(1, t, d) * 0.02)
            self.blocks = nn.ModuleList(Block(d, heads, t) for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            x = self.tok(ids) + self.pos
            for b in self.blocks:
                x = b(x)
            return self.head(self.ln(x))

    return Decoder(), (torch.randint(0, 512, (1, 16), dtype=torch.int32),)


def paths(name: str) -> dict:
    base = os.path.join(CACHE, name)
    return {"mlpackage": base + ".mlpackage", "onnx": base + ".onnx", "torch": base + ".pt", "data": base + ".npz"}


def make(name: str, force: bool = False) -> dict:
    import coremltools as ct
    import torch
    p = paths(name)
    if not force and all(os.path.exists(v) for v in p.values()):
        return p
    os.makedirs(CACHE, exist_ok=True)
    torch.manual_seed(0)
    module, example = globals()[name]()
    module.eval()
    with torch.no_grad():
        for m in module.modules():        # trained-looking statistics, not the identity
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
        want = module(*example)
    traced = torch.jit.trace(module, example)
    traced.save(p["torch"])
    torch.onnx.export(module, example, p["onnx"], input_names=[f"in{i}" for i in range(len(example))],
                      output_names=["out"], opset_version=17, dynamo=False)
    inputs = [ct.TensorType(name=f"in{i}", shape=e.shape,
                            dtype=np.int32 if e.dtype in (torch.int32, torch.int64) else np.float32)
              for i, e in enumerate(example)]
    if os.path.exists(p["mlpackage"]):
        shutil.rmtree(p["mlpackage"])
    ct.convert(traced, inputs=inputs, compute_precision=ct.precision.FLOAT32,
               minimum_deployment_target=ct.target.iOS17).save(p["mlpackage"])
    np.savez(p["data"], **{f"in_in{i}": e.numpy() for i, e in enumerate(example)}, out_out=want.numpy())
    return p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--force", action="store_true", help="make them again")
    args = ap.parse_args()
    for name in NAMES:
        print(name, make(name, args.force)["mlpackage"])


if __name__ == "__main__":
    main()
