"""A 3x3 convolution of stride 1 by Winograd's F(2x2, 3x3) (Lavin and Gray, 2015): each 2x2
block of outputs from the 4x4 window under it as 16 products of 2.25 times fewer multiply-adds
than the window matrices conv's direct path multiplies, and no 9-fold copy of the input. The
C kernels transform the weights, the windows and the results (zero padding read in place);
the 16 products are one batched matrix product of the BLAS. On ResNet-18's 3x3 layers this
takes a layer of 56x56 from 3.4 to 1.9 ms; for few tiles, the weights' transform (done per
run: a kept copy would hold 16/9 of them) costs more than it saves."""
from __future__ import annotations

import numpy as np

from .. import parallel

# Tiles (2x2 outputs) each thread must have for the transform of the weights (on one thread)
# to pay: ResNet-18's 14x14 layers (49 tiles) gain 10% on one thread and lose on two, its 7x7
# layers (16) lose 50%.
_TILES = 36
_BUDGET = 1 << 25       # bytes of transformed windows and products held at once (as conv's)


def takes(native, x, weight, strides, dilations, groups: int, around) -> bool:
    """Whether the C transforms run this conv: 2-D, fp32, groups 1, a 3x3 kernel of stride and
    dilation 1, enough tiles for each of the threads it would be shared among."""
    if (native is None or x.ndim != 4 or weight.shape[2:] != (3, 3) or groups != 1 or weight.dtype != np.float32
            or not weight.size):
        return False
    if list(strides) != [1, 1] or list(dilations) != [1, 1] or weight.shape[1] != x.shape[1]:
        return False
    ho, wo = (size + b + e - 2 for size, (b, e) in zip(x.shape[2:], around))
    if ho <= 0 or wo <= 0:
        return False
    tiles = x.shape[0] * -(-ho // 2) * -(-wo // 2)
    return tiles >= _TILES * parallel.threads(16 * tiles * weight.shape[0] * weight.shape[1], parallel.PIECE)


def correlate(a, native, x, weight, around, bias=None):
    """x (N, C, H, W), C-contiguous float32, correlated with weight (K, C, 3, 3) under the
    zero padding `around` ((top, bottom), (left, right)), plus bias (K,) -> (N, K, Ho, Wo).
    The tile rows are taken in bands (shared among the run's threads when it has them)."""
    n, c, h, w = x.shape
    k = weight.shape[0]
    (top, bottom), (left, right) = around
    ho, wo = h + top + bottom - 2, w + left + right - 2
    th, tw = -(-ho // 2), -(-wo // 2)
    a.allow((16, k, c), 4, "the transformed weights")
    u = np.empty((16, k, c), np.float32)
    native.winograd_weight(np.ascontiguousarray(weight), u)
    if bias is not None:
        bias = np.ascontiguousarray(np.broadcast_to(bias.reshape(-1), (k,)), np.float32)
    macs = n * 16 * k * c * th * tw
    share = parallel.threads(macs, parallel.PIECE)
    row_bytes = 16 * (c + k) * tw * 4
    band = max(1, _BUDGET // share // row_bytes)
    if share > 1 and n < share:
        band = min(band, -(-th * n // share))           # a band for every thread
    a.allow((min(band, th) * share, row_bytes), 1, "the transformed windows")
    y = np.empty((n, k, ho, wo), np.float32)
    bands = [(i, row0) for i in range(n) for row0 in range(0, th, band)]

    def run(start: int, stop: int) -> None:
        for i, row0 in bands[start:stop]:
            rows = min(band, th - row0)
            v = np.empty((16, c, rows * tw), np.float32)
            native.winograd_in(x[i], v, c, h, w, top, left, row0, rows, tw)
            m = np.matmul(u, v)
            native.winograd_out(m, bias, y[i], k, ho, wo, row0, rows, tw)
    parallel.bands(len(bands), run, share, macs)
    return y
