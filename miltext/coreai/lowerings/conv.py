"""conv: the dialect's conv2d has no padding and no bias, so `pad` comes first and an add
after; a 1-D conv is a 2-D one over a height of 1."""
from __future__ import annotations

import math

import numpy as np

from ..errors import PortError
from ..table import lowers
from .common import binary, name_of, reshape


def pads(low, op, spatial: tuple, kernel: tuple, strides, dilations) -> list:
    """[before, after] per spatial dim, as MIL's pad_type says."""
    pad_type = str(low.known_value(op, "pad_type", np.asarray("valid")))
    n = len(spatial)
    if pad_type == "custom":
        p = [int(v) for v in np.asarray(low.known_value(op, "pad", np.zeros(2 * n))).reshape(-1)]
        return [p[2 * i:2 * i + 2] for i in range(n)]
    if pad_type == "valid":
        return [[0, 0] for _ in range(n)]
    out = []
    for size, k, s, d in zip(spatial, kernel, strides, dilations):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        before = total // 2 if pad_type == "same" else (total + 1) // 2
        out.append([before, total - before])
    return out


def padded(low, x, spatial_pads, value=0.0):
    if not any(any(p) for p in spatial_pads):
        return x
    full = [[0, 0]] * (len(x.shape) - len(spatial_pads)) + spatial_pads
    flat = [int(v) for pair in full for v in pair]
    shape = tuple(d + a + b for d, (a, b) in zip(x.shape, full))
    padding = low.constant(np.asarray(flat, np.uint32), "uint32", "padding")
    fill = low.constant(np.asarray(value, np.float32).astype(np.float16 if x.dtype == "fp16" else np.float32),
                        x.dtype, "pad_value")
    return low.emit("pad", [x, padding, fill], (x.dtype, shape),
                    "padding_mode = #coreai.padding_mode<constant>")


def as_2d(low, x):
    """A 1-D spatial input (N, C, W) as (N, C, 1, W)."""
    return reshape(low, x, x.shape[:2] + (1,) + x.shape[2:]) if len(x.shape) == 3 else x


@lowers("conv")
def conv(low, op):
    x = low.tensor(op, "x")
    if len(x.shape) not in (3, 4):
        raise PortError(f"conv over {len(x.shape) - 2} spatial dims has no Core AI lowering (1-D and 2-D do)")
    n = len(x.shape) - 2
    w = low.tensor(op, "weight")
    kernel = w.shape[2:]
    strides = [int(s) for s in np.asarray(low.known_value(op, "strides", np.ones(n))).reshape(-1)]
    dil = [int(s) for s in np.asarray(low.known_value(op, "dilations", np.ones(n))).reshape(-1)]
    groups = int(low.known_value(op, "groups", 1))
    p = pads(low, op, x.shape[2:], kernel, strides, dil)
    if n == 1:
        x, w, p, strides, dil, kernel = as_2d(low, x), as_2d(low, w), [[0, 0]] + p, [1] + strides, [1] + dil, (1,) + kernel
    x = padded(low, x, p)
    h = (x.shape[2] - dil[0] * (kernel[0] - 1) - 1) // strides[0] + 1
    wd = (x.shape[3] - dil[1] * (kernel[1] - 1) - 1) // strides[1] + 1
    y = low.emit("conv2d", [x, w, low.uints(strides, "strides"), low.uints(dil, "dilations"),
                            low.constant(np.asarray(groups, np.uint32), "uint32", "groups")],
                 (x.dtype, (x.shape[0], w.shape[0], h, wd)))
    if low.has(op, "bias"):
        b = low.tensor(op, "bias")
        y = binary(low, "add", y, reshape(low, b, (b.shape[0], 1, 1)))
    low.bind(op, reshape(low, y, low.out(op)[1], hint=name_of(op)))
