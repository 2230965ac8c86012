"""Makes tests/run_cases/: small torch models converted by coremltools with fixed seeds, each
saved as NAME.mlpackage beside NAME.npz holding the inputs (`in_*`) and torch's outputs
(`out_*`, in the order of the model's outputs), for tests/test_run.py, which runs them with
miltext's interpreter and no torch installed.

Needs torch and coremltools:  python scripts/make_run_fixtures.py
"""
from __future__ import annotations

import os
import shutil

import coremltools as ct
import numpy as np
import torch
from torch import nn

OUT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "run_cases")


class Block(nn.Module):
    """A pre-norm transformer block: layer_norm, attention by matmul and softmax, GELU MLP."""

    def __init__(self, d=16, heads=2, t=5):
        super().__init__()
        self.heads, self.d, self.t = heads, d, t   # static sizes: the trace keeps no shape arithmetic
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = 1, self.t, self.d
        q, k, v = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm2(x))))


class Cnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=2), nn.SiLU(),
            nn.Conv2d(8, 16, 1), nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16 * 2 * 2, 5))

    def forward(self, x):
        return torch.softmax(self.body(x), dim=-1)


class UpDown(nn.Module):
    """A UNet-style pair: a strided conv down, a conv_transpose back up, a skip connection."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(4, 8, 4, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)
        self.norm = nn.InstanceNorm2d(4, affine=True)

    def forward(self, x):
        return self.norm(self.up(torch.tanh(self.down(x))) + x)


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 10, batch_first=True)
        self.head = nn.Linear(10, 3)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.head(out)


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 16), nn.Sigmoid(), nn.Linear(16, 4))

    def forward(self, x):
        return self.net(x)


CASES = {
    # name: (model, input shapes, compute precision)
    "mlp_fp32": (Mlp, [(2, 8)], ct.precision.FLOAT32),
    "mlp_fp16": (Mlp, [(2, 8)], ct.precision.FLOAT16),
    "cnn_fp32": (Cnn, [(1, 3, 16, 16)], ct.precision.FLOAT32),
    "transformer_fp32": (Block, [(1, 5, 16)], ct.precision.FLOAT32),
    "transformer_fp16": (Block, [(1, 5, 16)], ct.precision.FLOAT16),
    "unet_fp32": (UpDown, [(1, 4, 8, 8)], ct.precision.FLOAT32),
    "lstm_fp32": (Lstm, [(1, 7, 6)], ct.precision.FLOAT32),
}


def make(name: str, cls, shapes, precision) -> None:
    torch.manual_seed(0)
    model = cls().eval()
    for p in model.modules():   # batch norm with statistics that are not the identity
        if isinstance(p, nn.BatchNorm2d):
            p.running_mean.uniform_(-0.5, 0.5)
            p.running_var.uniform_(0.5, 1.5)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    with torch.no_grad():
        traced = torch.jit.trace(model, tuple(torch.from_numpy(x) for x in inputs))
        outputs = traced(*[torch.from_numpy(x) for x in inputs])
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    mlmodel = ct.convert(traced, inputs=[ct.TensorType(name=f"x{i}", shape=s) for i, s in enumerate(shapes)],
                         minimum_deployment_target=ct.target.iOS17, compute_precision=precision,
                         convert_to="mlprogram")
    path = os.path.join(OUT, name + ".mlpackage")
    shutil.rmtree(path, ignore_errors=True)
    mlmodel.save(path)
    names = [o.name for o in mlmodel._spec.description.output]
    np.savez(os.path.join(OUT, name + ".npz"), **{f"in_x{i}": x for i, x in enumerate(inputs)},
             **{f"out_{n}": o.numpy() for n, o in zip(names, outputs)})
    print(name, [o.shape for o in outputs])


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, (cls, shapes, precision) in CASES.items():
        make(name, cls, shapes, precision)
