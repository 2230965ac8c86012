"""conv's direct path in C for 2-D convolutions (fp32, not grouped): bands of output rows taken
from a counter the run's threads share, each band's windows laid out by C code that reads the
padding in place (no padded copy of the input) and multiplied by NumPy's OpenBLAS, called from
C, straight into the output. A band is a few hundred outputs wide, so its windows stay in the
core's cache, and a thread that starts late or runs on a slower core takes fewer bands. Layers
of too few output rows for that keep to conv's NumPy path, which shares their output channels."""
from __future__ import annotations

import math

import numpy as np

from .. import fast_kernels, parallel

_BUDGET = 1 << 25       # bytes of windows laid out at once (as conv's NumPy path)


def takes(native, x, weight, strides, dilations, groups: int, around) -> bool:
    """Whether the C bands run this conv: 2-D, fp32, not grouped, not a plain product (a 1x1
    kernel of stride 1 without padding multiplies the input as it is), an output, and bands
    enough for the threads it would be shared among (parallel.claims)."""
    if (native is None or x.ndim != 4 or groups != 1 or weight.dtype != np.float32 or not weight.size
            or weight.shape[1] != x.shape[1]):
        return False
    if weight.shape[2:] == (1, 1) and list(strides) == [1, 1] and not any(b or e for b, e in around):
        return False
    out = _output(x.shape[2:], weight.shape[2:], strides, dilations, around)
    if min(out) <= 0:
        return False
    share = parallel.threads(_macs(x, weight, out), parallel.PIECE)
    band = _band(x, weight, out, share)
    return (parallel.claims(x.shape[0] * -(-out[0] // band), share)
            and x.shape[1] * math.prod(weight.shape[2:]) * band * out[1] <= fast_kernels.SCRATCH
            and fast_kernels.multiplies(native))


def correlate(a, native, x, weight, strides, dilations, around, bias=None):
    """x (N, C, H, W), C-contiguous float32, correlated with weight (O, C, kh, kw) under the
    zero padding `around` ((top, bottom), (left, right)), plus bias (O,) -> (N, O, Ho, Wo)."""
    n, c, h, w = x.shape
    o = weight.shape[0]
    out = _output(x.shape[2:], weight.shape[2:], strides, dilations, around)
    macs = _macs(x, weight, out)
    share = parallel.threads(macs, parallel.PIECE)
    band = _band(x, weight, out, share)
    a.allow((n, o) + out, 4, "the output")
    a.allow((share, c * math.prod(weight.shape[2:]) * min(band, out[0]) * out[1]), 4, "the windows laid out")
    y = np.empty((n, o) + out, np.float32)
    weight = np.ascontiguousarray(weight)
    if bias is not None:
        bias = np.ascontiguousarray(np.broadcast_to(bias.reshape(-1), (o,)), np.float32)
    geometry = np.array(list(weight.shape[2:]) + list(strides) + list(dilations) + [around[0][0], around[1][0]],
                        np.int64)
    parallel.claimed(lambda counter: native.conv_bands(x, weight, bias, y, counter, geometry, n, c, h, w, o,
                                                       *out, band), share, macs)
    return y


def _output(spatial, kernel, strides, dilations, around) -> tuple:
    return tuple((size + b + e - (k - 1) * d - 1) // s + 1
                 for size, k, s, d, (b, e) in zip(spatial, kernel, strides, dilations, around))


def _macs(x, weight, out) -> int:
    return x.shape[0] * weight.shape[0] * x.shape[1] * math.prod(weight.shape[2:]) * math.prod(out)


def _band(x, weight, out, share: int) -> int:
    """Output rows a band holds: parallel.COLUMNS outputs, within the budget of windows."""
    row_bytes = x.shape[1] * math.prod(weight.shape[2:]) * out[1] * 4
    return max(1, min(-(-parallel.COLUMNS // out[1]), _BUDGET // share // row_bytes))
