"""conv's direct path in C for 2-D convolutions (fp32, not grouped): bands of output rows taken
from a counter the run's threads share, each band's windows laid out by C code that reads the
padding in place (no padded copy of the input) and multiplied by NumPy's OpenBLAS, called from
C, straight into the output. A band is a few hundred outputs wide, so its windows stay in the
core's cache, and a thread that starts late or runs on a slower core takes fewer bands. A layer
of too few output rows for that (ResNet-18's 7x7 and 14x14 outputs) is shared in blocks of its
output channels, every band's windows laid out once first, the threads sharing that too: on two
threads its 7x7 layers took 2.4 ms against NumPy's 2.6 (windows copied, halves multiplied),
its 1x1 downsamples 0.37 against 0.53, one thread 3.9 against 4.2."""
from __future__ import annotations

import math

import numpy as np

from .. import fast_kernels, parallel
from ..limits import need

_BUDGET = 1 << 25       # bytes of windows laid out at once (as conv's NumPy path)


class Plan:
    """How the C bands run a conv of given shapes (see plan), worked out once: the threads
    and multiply-adds it is shared by, the output's shape, what it allocates (limits.need's)
    and conv_bands' arguments besides the arrays and the relu; the C kernel writes the output
    (adding a residual as it does)."""
    __slots__ = ("share", "macs", "shape", "needs", "call")
    in_c = True

    def __init__(self, share: int, macs: int, shape: tuple, needs: tuple, call: tuple):
        self.share, self.macs, self.shape, self.needs, self.call = share, macs, shape, needs, call


def plan(native, x, weight, strides, dilations, groups: int, around) -> Plan | None:
    """How the C bands run this conv, where they do: 2-D, fp32, not grouped, not a plain
    product (a 1x1 kernel of stride 1 without padding multiplies the input as it is), an
    output, and bands enough for the threads it would be shared among (parallel.claims); else
    None."""
    if (native is None or x.ndim != 4 or groups != 1 or weight.dtype != np.float32 or not weight.size
            or weight.shape[1] != x.shape[1]):
        return None
    if weight.shape[2:] == (1, 1) and list(strides) == [1, 1] and not any(b or e for b, e in around):
        return None
    out = _output(x.shape[2:], weight.shape[2:], strides, dilations, around)
    if min(out) <= 0:
        return None
    macs = _macs(x, weight, out)
    share = parallel.threads(macs, parallel.PIECE)
    band = _band(x, weight, out, share)
    block = _block(x.shape[0] * -(-out[0] // band), weight.shape[0], share)
    if (block is None or x.shape[1] * math.prod(weight.shape[2:]) * band * out[1] > fast_kernels.SCRATCH
            or not fast_kernels.multiplies(native)):
        return None
    n, c, h, w = x.shape
    o = weight.shape[0]
    bands = n * -(-out[0] // band)
    # blocks shared by threads lay out every band once (the C call's first phase), else each
    # thread lays out its own band at a time
    laid = bands if block < o and share > 1 else share
    needs = (need((n, o) + out, 4, "the output"),
             need((laid, c * math.prod(weight.shape[2:]) * min(band, out[0]) * out[1]), 4, "the windows laid out"))
    geometry = np.array(list(weight.shape[2:]) + list(strides) + list(dilations) + [around[0][0], around[1][0]],
                        np.int64)
    geometry.flags.writeable = False
    return Plan(share, macs, (n, o) + out, needs, (geometry, n, c, h, w, o, *out, band, block))


def caller(native, weight, planned: Plan, bias=None, relu: bool = False):
    """compute(x, residual=None) -> y: x (N, C, H, W), C-contiguous float32, correlated with
    weight (O, C, kh, kw) as `planned` (plan's, for these shapes, strides, dilations and
    padding), plus bias (O,) and `residual` (float32 of the output's shape, C-contiguous), its
    negatives made 0 when `relu` -> (N, O, Ho, Wo). Every setting is bound (a run of a replayed
    block calls it alone: replays.py); the memory planned.needs is the caller's to allow."""
    weight = np.ascontiguousarray(weight)
    bias = channel_values(bias, weight.shape[0])
    call, shape, share, macs = planned.call, planned.shape, planned.share, planned.macs

    def compute(x, residual=None):
        y = np.empty(shape, np.float32)
        parallel.claimed(native, lambda counter: native.conv_bands(x, weight, bias, y, counter, *call, relu, residual),
                         share, macs)
        return y
    return compute


def channel_values(bias, o: int):
    """A conv's bias (one value, or one an output channel) as o contiguous float32 values for
    the C kernels; None for none."""
    if bias is None:
        return None
    if type(bias) is np.ndarray and bias.dtype == np.float32 and bias.size == o and bias.flags.c_contiguous:
        return bias.reshape(-1)
    return np.ascontiguousarray(np.broadcast_to(bias.reshape(-1), (o,)), np.float32)


def _output(spatial, kernel, strides, dilations, around) -> tuple:
    return tuple((size + b + e - (k - 1) * d - 1) // s + 1
                 for size, k, s, d, (b, e) in zip(spatial, kernel, strides, dilations, around))


def _macs(x, weight, out) -> int:
    return x.shape[0] * weight.shape[0] * x.shape[1] * math.prod(weight.shape[2:]) * math.prod(out)


def _band(x, weight, out, share: int) -> int:
    """Output rows a band holds: parallel.COLUMNS outputs, within the budget of windows."""
    row_bytes = x.shape[1] * math.prod(weight.shape[2:]) * out[1] * 4
    return max(1, min(-(-parallel.COLUMNS // out[1]), _BUDGET // share // row_bytes))


_BLOCK = 16         # output channels a part's block is a multiple of
_BLOCK_MIN = 64     # and the fewest it holds: narrower, the BLAS's packing outweighs the sharing


def _block(bands: int, o: int, share: int) -> int | None:
    """Output channels a part holds: all of them on one thread or where the bands are parts
    enough for the threads (parallel.claims), else blocks of them, a part for each thread
    (parallel.BLOCK_CLAIMS) where they stay _BLOCK_MIN wide; None where there are too few."""
    if share == 1 or parallel.claims(bands, share):
        return o
    blocks = -(-parallel.BLOCK_CLAIMS * share // bands)
    block = max(_BLOCK_MIN, -(-o // blocks // _BLOCK) * _BLOCK)
    return block if bands * -(-o // block) >= share else None
