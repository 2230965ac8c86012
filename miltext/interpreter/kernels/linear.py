"""linear, matmul and einsum: computed in at least fp32 (Core ML's CPU accumulates fp16
products in fp32), the result in the declared dtype."""
from __future__ import annotations

from contextlib import nullcontext

import numpy as np

from .. import parallel
from ..blas_threads import SMALL, sized
from ..fast_kernels import usable
from ..registry import kernel
from ..weight_maps import transposed


def wide(x):
    """Floats below fp32 computed in fp32."""
    if type(x) is not np.ndarray:
        x = np.asarray(x)
    return x.astype(np.float32) if x.itemsize < 4 and x.dtype.kind == "f" else x


# A product below SMALL multiply-adds runs on the one BLAS thread a run holds: no context need
# be made for it (a run's small products are most of a small model's).
_NULL = nullcontext()

# A weight up to this size is kept transposed. OpenBLAS's small products gain from it; a big
# weight's products run as fast through the transposed view (a GPT-2-small block: 35 ms
# either way), and its copy would raise a run's peak memory by megabytes.
SMALL_WEIGHT = 1 << 20    # bytes


def _transposed(weight):
    """A small float weight of at least fp32, transposed in an array of its own: OpenBLAS
    multiplies small x by it (x @ W.T as x @ Wt) two to three times as fast as by W's
    transposed view."""
    if weight.ndim != 2 or weight.dtype.kind != "f" or weight.itemsize < 4 or weight.nbytes > SMALL_WEIGHT:
        return None
    return transposed(weight)


@kernel("linear")
def linear(a):
    x = np.asarray(a("x"))
    wt = a.kept("weight", _transposed)
    weight = a("weight") if wt is None else None
    bias = a("bias", None)
    bias = None if bias is None else wide(bias)
    native = usable(a, x) if wt is not None else None
    if native is not None and _native_takes(x, wt, bias):
        return a.replayable(_native_linear(native, wt, bias), "x")(x)
    return a.replayable(_linear(wt, weight, bias), "x")(x)


def _native_takes(x, wt, bias) -> bool:
    """Whether the C product takes x (C-contiguous float32) by a small kept weight: a product
    of at least four rows below SMALL multiply-adds (where it beats the BLAS, whose packing
    costs more than such a product's arithmetic), float32 throughout."""
    k = wt.shape[0]
    return (wt.dtype == np.float32 and x.ndim >= 1 and x.shape[-1] == k and x.size >= 4 * k
            and x.size * wt.shape[1] < SMALL
            and (bias is None or (bias.dtype == np.float32 and bias.shape == wt.shape[1:] and bias.flags.c_contiguous)))


def _native_linear(native, wt, bias):
    """x @ W.T + bias as a function of x, by the C product (`wt`: W transposed, float32)."""
    k, n = wt.shape

    def compute(x):
        y = np.empty(x.shape[:-1] + (n,), np.float32)
        native.linear(x, wt, bias, y, k, n)
        return y
    return compute


def _linear(wt, weight, bias):
    """x @ W.T + bias as a function of x: W kept transposed (`wt`), else `weight` as given,
    widened at each call (a replay keeps no fp32 copy of an fp16 weight)."""
    def compute(x):
        xw = wide(x)
        w = wt if wt is not None else wide(weight).T
        macs = xw.size * (w.shape[-1] if w.ndim == 2 else 1)
        share = 1 if macs < SMALL else parallel.threads(macs, parallel.PIECE)
        if macs >= SMALL and xw.ndim >= 2 and xw.flags.c_contiguous and w.ndim == 2 and xw.shape[-1] == len(w):
            # the weight's columns shared among the run's threads (or all on this one), each
            # adding its bias
            y = np.empty(xw.shape[:-1] + w.shape[-1:], np.result_type(xw, w))
            flat_bias = bias if bias is not None and bias.shape == w.shape[-1:] and bias.dtype == y.dtype else None
            parallel.product(xw.reshape(-1, xw.shape[-1]), w, y.reshape(-1, y.shape[-1]), share, flat_bias)
            if bias is not None and flat_bias is None:
                y = y + bias
            return y.astype(x.dtype, copy=False)
        with _NULL if macs < SMALL else sized(macs):
            if xw.ndim > 2 and xw.flags.c_contiguous and w.ndim == 2:
                # one matrix product, not one per leading index; np.dot's 2-D call into the BLAS
                # costs less than matmul's (a product of a decoder's size: 2 us against 3)
                y = np.dot(xw.reshape(-1, xw.shape[-1]), w).reshape(xw.shape[:-1] + w.shape[-1:])
            elif xw.ndim == 2 and w.ndim == 2:
                y = np.dot(xw, w)
            else:
                y = xw @ w
        if bias is not None:
            if bias.dtype == y.dtype and bias.shape == y.shape[-1:]:
                y += bias
            else:
                y = y + bias
        return y.astype(x.dtype, copy=False)
    return compute


@kernel("matmul")
def matmul(a):
    x, y = np.asarray(a("x")), np.asarray(a("y"))
    swap_x = x.ndim > 1 and a.scalar("transpose_x", False)
    swap_y = y.ndim > 1 and a.scalar("transpose_y", False)
    native = a.evaluator.native
    if native is not None and _native_multiplies(x, y, swap_x, swap_y):
        return a.replayable(_native_matmul(native, swap_x, swap_y), "x", "y")(x, y)
    return a.replayable(_matmul(swap_x, swap_y), "x", "y")(x, y)


def _native_multiplies(x, y, swap_x: bool, swap_y: bool) -> bool:
    """Whether the C product takes x @ y: float32 stacks of one batch shape (no broadcast),
    below SMALL multiply-adds, no dim 0 (attention's products of each head)."""
    if x.dtype != np.float32 or y.dtype != np.float32 or x.ndim != y.ndim or x.ndim < 2 or x.shape[:-2] != y.shape[:-2]:
        return False
    m, k = x.shape[-1:-3:-1] if swap_x else x.shape[-2:]
    k2, n = y.shape[-1:-3:-1] if swap_y else y.shape[-2:]
    return k == k2 and min(m, k, n) > 0 and x.size * n < SMALL


def _native_matmul(native, swap_x: bool, swap_y: bool):
    """x @ y as a function of x and y by the C product, each made C-contiguous (a view of a
    split, as attention's are) in one copy; y's swap is the C code's (NumPy's copy of a
    swapped view costs more than the product)."""
    def compute(x, y):
        x = np.ascontiguousarray(np.swapaxes(x, -1, -2) if swap_x else x)
        y = np.ascontiguousarray(y)
        m, k = x.shape[-2:]
        n = y.shape[-2] if swap_y else y.shape[-1]
        out = np.empty(x.shape[:-1] + (n,), np.float32)
        native.matmul(x, y, out, m, k, n, swap_y)
        return out
    return compute


def _matmul(swap_x: bool, swap_y: bool):
    """x @ y as a function of x and y, either one's last two dims swapped first."""
    def compute(x, y):
        out_dtype = x.dtype if x.dtype == y.dtype else np.result_type(x, y)
        x, y = wide(x), wide(y)
        if swap_x:
            x = np.swapaxes(x, -1, -2)
        if swap_y:
            y = np.swapaxes(y, -1, -2)
        macs = max(x.size * (y.shape[-1] if y.ndim > 1 else 1), y.size * (x.shape[-2] if x.ndim > 1 else 1))
        share = (1 if macs < SMALL or x.ndim < 2 or y.ndim < 2 or x.shape[-1] != y.shape[-2]
                 else parallel.threads(macs, parallel.PIECE))
        if share > 1:       # the batch (or the output's columns) shared among the run's threads
            out = np.empty(np.broadcast_shapes(x.shape[:-2], y.shape[:-2]) + (x.shape[-2], y.shape[-1]),
                           np.result_type(x, y))
            return parallel.matmul(x, y, out, share).astype(out_dtype, copy=False)
        with _NULL if macs < SMALL else sized(macs):
            return np.matmul(x, y).astype(out_dtype, copy=False)
    return compute


@kernel("einsum")
def einsum(a):
    values = a.many("values")
    out_dtype = np.result_type(*values)
    return np.einsum(str(a.scalar("equation")), *[wide(v) for v in values]).astype(out_dtype)
