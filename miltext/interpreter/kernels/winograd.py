"""A 3x3 convolution of stride 1 by Winograd's F(2x2, 3x3) (Lavin and Gray, 2015): each 2x2
block of outputs from the 4x4 window under it as 16 products of 2.25 times fewer multiply-adds
than the window matrices conv's direct path multiplies, and no 9-fold copy of the input. The
C kernels transform the weights, the windows and the results (zero padding read in place);
the 16 products are one batched matrix product of the BLAS. On ResNet-18's 3x3 layers this
takes a layer of 56x56 from 3.4 to 1.9 ms; for few tiles, the weights' transform (done per
run: a kept copy would hold 16/9 of them) costs more than it saves. A run's threads share
bands of tile rows, or, where an image has fewer tiles than twice the layer's outputs, the
output channels: each thread then transforms only its own channels' weights."""
from __future__ import annotations

import numpy as np

from .. import fast_kernels, fusion, parallel
from ..limits import need
from . import conv_bands

# Tiles (2x2 outputs) a thread's share must have for the transform of the weights to pay:
# ResNet-18's 14x14 layers (49 tiles) gain 10% on one thread (and, their output channels
# shared, 15% on two), its 7x7 layers (16) lose 50%.
_TILES = 36
_BUDGET = 1 << 25       # bytes of transformed windows and products held at once (as conv's)


class Plan:
    """How Winograd's transforms run a conv of given shapes (see plan), worked out once: the
    way ("outputs" and "bands" in C, or NumPy's products by "channels" or in "numpy bands"),
    the threads and multiply-adds it is shared by, the layer's sizes (n, c, h, w, k, ho, wo,
    top, left), a part (a block of output channels, or a band's tile rows), what it allocates
    (limits.need's), the output's shape and whether the C kernels write it (adding a residual
    as they do)."""
    __slots__ = ("way", "share", "macs", "layer", "part", "needs", "shape", "in_c")

    def __init__(self, way: str, share: int, macs: int, layer: tuple, part: int, needs: tuple):
        self.way, self.share, self.macs, self.layer, self.part, self.needs = way, share, macs, layer, part, needs
        n, c, h, w, k, ho, wo, top, left = layer
        self.shape, self.in_c = (n, k, ho, wo), way in ("outputs", "bands")


def plan(native, x, weight, strides, dilations, groups: int, around) -> Plan | None:
    """How the C transforms run this conv, where they do: 2-D, fp32, groups 1, a 3x3 kernel of
    stride and dilation 1, enough tiles for each of the threads it would be shared among
    (every thread has every tile when they share the output channels); else None."""
    if (native is None or x.ndim != 4 or weight.shape[2:] != (3, 3) or groups != 1 or weight.dtype != np.float32
            or not weight.size):
        return None
    if list(strides) != [1, 1] or list(dilations) != [1, 1] or weight.shape[1] != x.shape[1]:
        return None
    n, c, h, w = x.shape
    k = weight.shape[0]
    (top, bottom), (left, right) = around
    ho, wo = h + top + bottom - 2, w + left + right - 2
    if ho <= 0 or wo <= 0:
        return None
    th, tw = -(-ho // 2), -(-wo // 2)
    tiles = th * tw
    macs = n * 16 * k * c * tiles
    share = parallel.threads(macs, parallel.PIECE)
    layer = (n, c, h, w, k, ho, wo, top, left)
    made = (need((n, k, ho, wo), 4, "the output"), need((16, k, c), 4, "the transformed weights"))
    if _by_outputs(share, n, k, tiles):
        if tiles < _TILES:
            return None
        way = "outputs" if fast_kernels.multiplies(native) else "channels"
        return Plan(way, share, macs, layer, _outputs_block(k, share),
                    made + (need((n, 16, c, tiles), 4, "the transformed windows"),))
    if n * tiles < _TILES * share:
        return None
    row_bytes = 16 * (c + k) * tw * 4
    band = max(1, min(-(-parallel.COLUMNS // tw), _BUDGET // share // row_bytes))
    # in C on one thread whatever the bands (ResNet-18 on one thread: 44.3 against 45.4 ms with
    # its 28x28 and 14x14 layers in NumPy's bands), on more where they are parts enough
    in_c = share == 1 or parallel.claims(n * -(-th // band), share)
    if in_c and 16 * (c + k) * band * tw <= fast_kernels.SCRATCH and fast_kernels.multiplies(native):
        return Plan("bands", share, macs, layer, band,
                    made + (need((share, band * row_bytes), 1, "the transformed windows"),))
    band = max(1, _BUDGET // share // row_bytes)
    if share > 1 and n < share:
        band = min(band, -(-th * n // share))           # a band for every thread
    return Plan("numpy bands", share, macs, layer, band,
                made + (need((min(band, th) * share, row_bytes), 1, "the transformed windows"),))


def _by_outputs(share: int, n: int, k: int, tiles: int) -> bool:
    """Whether `share` threads share the output channels rather than bands of tile rows: for
    fewer images than threads (more take an image each) with fewer tiles than twice the layer's
    outputs (its transformed windows then at most twice the transformed weights). There the
    weights' transform weighs as much as the windows' (on a 14x14 layer of 256 channels, 0.74
    ms on the calling thread alone before sharing), and a band of the tile rows is too narrow
    a product for the BLAS's pace (half of that layer's 49 tiles took longer than all of them;
    ResNet-18's 28x28 layers, 196 tiles of 128 outputs, took 0.95-0.99 ms on two threads
    shared by outputs against 1.11-1.24 in halves of their tile rows)."""
    return 1 < share and n < share and tiles < 2 * k


def correlate(a, native, x, weight, planned: Plan, bias=None, relu: bool = False):
    """x (N, C, H, W), C-contiguous float32, correlated with weight (K, C, 3, 3) in NumPy's
    batched products (planned.way "channels" or "numpy bands"; the C ways are caller's), plus
    bias (K,), its negatives made 0 when `relu` -> (N, K, Ho, Wo)."""
    a.allow_each(planned.needs)
    layer, share, macs, part = planned.layer, planned.share, planned.macs, planned.part
    bias = conv_bands.channel_values(bias, layer[4])
    weight = np.ascontiguousarray(weight)
    if planned.way == "channels":
        y = _channels_shared(native, x, weight, bias, layer, share)
    else:
        y = _numpy_bands(native, x, _transformed(native, weight, share), bias, layer, part, (share, macs))
    return fusion.relu(y) if relu else y


def caller(native, weight, planned: Plan, bias=None, relu: bool = False):
    """The C ways (planned.in_c) as compute(x, residual=None) -> y: x (N, C, H, W),
    C-contiguous float32, correlated with weight (K, C, 3, 3) as `planned`, plus bias (K,) and
    `residual` (float32 of the output's shape, C-contiguous), its negatives made 0 when `relu`:
    the threads share the output channels (_by_outputs), or bands of tile rows, taken from a
    counter by C kernels that multiply themselves and add the residual and apply the relu to
    each part. Every setting is bound (a run of a replayed block calls it alone: replays.py);
    the memory planned.needs is the caller's to allow."""
    layer, share, macs, part = planned.layer, planned.share, planned.macs, planned.part
    n, c, h, w, k, ho, wo, top, left = layer
    bias = conv_bands.channel_values(bias, k)
    weight = np.ascontiguousarray(weight)
    if planned.way == "outputs":
        th, tw = -(-ho // 2), -(-wo // 2)

        def outputs(x, residual=None):
            v, y = np.empty((n, 16, c, th * tw), np.float32), np.empty((n, k, ho, wo), np.float32)
            parallel.claimed(native, lambda counter: native.winograd_outputs(x, weight, bias, y, v, counter, *layer,
                                                                             part, relu, residual), share, macs)
            return y
        return outputs

    def bands(x, residual=None):
        y = np.empty((n, k, ho, wo), np.float32)
        u = np.empty((16, k, c), np.float32)        # transformed by the threads first, in the same call
        parallel.claimed(native, lambda counter: native.winograd_bands(x, u, bias, y, counter, *layer, part, relu,
                                                                       weight, residual), share, macs)
        return y
    return bands


def _transformed(native, weight, share: int = 1):
    """The 16 planes (16, K, C) of weight (K, C, 3, 3) transformed, the output channels shared
    among `share` threads (a 28x28 layer of 128 channels: 0.2 ms of a 1.5 ms layer)."""
    k, c = weight.shape[:2]
    u = np.empty((16, k, c), np.float32)
    if share > 1:
        parallel.split(k, lambda start, stop: native.winograd_weight(weight, u, start * c, (stop - start) * c), share)
    else:
        native.winograd_weight(weight, u)
    return u


def _numpy_bands(native, x, u, bias, layer: tuple, band: int, shared: tuple):
    """correlate in bands of `band` tile rows, their 16 products NumPy's batched product,
    shared (share, macs) as parallel.bands does."""
    n, c, h, w, k, ho, wo, top, left = layer
    th, tw = -(-ho // 2), -(-wo // 2)
    y = np.empty((n, k, ho, wo), np.float32)
    bands = [(i, row0) for i in range(n) for row0 in range(0, th, band)]

    def run(start: int, stop: int) -> None:
        for i, row0 in bands[start:stop]:
            rows = min(band, th - row0)
            v = np.empty((16, c, rows * tw), np.float32)
            native.winograd_in(x[i], v, c, h, w, top, left, row0, rows, tw)
            m = np.matmul(u, v)
            native.winograd_out(m, bias, y[i], k, ho, wo, row0, rows, tw)
    parallel.bands(len(bands), run, *shared)
    return y


def _outputs_block(k: int, share: int) -> int:
    """Output channels a part of winograd_outputs holds: parallel.BLOCK_CLAIMS parts for each
    thread (every part multiplies all the transformed windows), in multiples of 16."""
    return max(16, -(-k // (parallel.BLOCK_CLAIMS * share) // 16) * 16)


def _channels_shared(native, x, weight, bias, layer: tuple, share: int):
    """correlate with the output channels shared among `share` threads, in NumPy's products:
    every image's windows transformed first (on the calling thread), then each thread
    transforms its channels' weights, multiplies them and writes its channels of every image."""
    n, c, h, w, k, ho, wo, top, left = layer
    th, tw = -(-ho // 2), -(-wo // 2)
    v = np.empty((n, 16, c, th * tw), np.float32)
    for i in range(n):
        native.winograd_in(x[i], v[i], c, h, w, top, left, 0, th, tw)
    y = np.empty((n, k, ho, wo), np.float32)

    def run(start: int, stop: int) -> None:
        u = _transformed(native, weight[start:stop])
        m = np.empty((16, stop - start, th * tw), np.float32)
        for i in range(n):
            np.matmul(u, v[i], out=m)
            native.winograd_out(m, None if bias is None else bias[start:stop], y[i, start:stop],
                                stop - start, ho, wo, 0, th, tw)
    parallel.split(k, run, share)
    return y
