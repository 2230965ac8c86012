"""Convolution (1-3 spatial dims, groups, dilations, every pad_type) and its transpose, as
one batched matrix product over a strided view: no Python loop over positions."""
from __future__ import annotations

import math

import numpy as np

from .. import fusion, parallel
from ..errors import RunError
from ..fast_kernels import usable
from ..registry import kernel
from . import conv_bands, winograd
from .linear import wide


def pads(a, spatial: tuple, kernel_shape: tuple, strides: list, dilations: list) -> list:
    """(before, after) padding of each spatial dim for the op's pad_type."""
    pad_type = str(a.scalar("pad_type", "valid"))
    n = len(spatial)
    if pad_type == "valid":
        return [(0, 0)] * n
    if pad_type == "custom":
        p = a.ints("pad", None) or [0] * (2 * n)
        if min(p, default=0) < 0:
            raise RunError(f"pad {list(p)} has a negative amount: padding adds, it cannot crop")
        return [(p[2 * i], p[2 * i + 1]) for i in range(n)]
    if pad_type in ("same", "same_lower"):
        out = []
        for size, k, s, d in zip(spatial, kernel_shape, strides, dilations):
            total = max((-(-size // s) - 1) * s + (k - 1) * d + 1 - size, 0)
            small, big = total // 2, total - total // 2
            out.append((big, small) if pad_type == "same_lower" else (small, big))
        return out
    raise RunError(f"pad_type {pad_type!r} is none conv knows (valid, same, same_lower, custom)")


def padded(x, around: list, value=0.0):
    """x with `value` around its last len(around) dims ((before, after) each): the inside
    copied once and the edges filled (np.pad's steps, without its tens of microseconds)."""
    lead = x.ndim - len(around)
    shape = x.shape[:lead] + tuple(n + b + e for n, (b, e) in zip(x.shape[lead:], around))
    out = np.empty(shape, x.dtype)
    out[(slice(None),) * lead + tuple(slice(b, b + n) for n, (b, _) in zip(x.shape[lead:], around))] = x
    for d, (b, e) in enumerate(around):
        edge = (slice(None),) * (lead + d)
        if b:
            out[edge + (slice(0, b),)] = value
        if e:
            out[edge + (slice(shape[lead + d] - e, None),)] = value
    return out


def windows(x, kernel_shape, strides, dilations):
    """x (N, C, *spatial) as (N, C, *out, *kernel) windows, a view."""
    n = len(kernel_shape)
    spatial = x.shape[2:]
    out = [(size - (k - 1) * d - 1) // s + 1 for size, k, s, d in zip(spatial, kernel_shape, strides, dilations)]
    if any(o <= 0 for o in out):
        raise RunError(f"the kernel {tuple(kernel_shape)} does not fit the input's {tuple(spatial)} (after padding)")
    st = x.strides
    shape = x.shape[:2] + tuple(out) + tuple(kernel_shape)
    strides_ = st[:2] + tuple(st[2 + i] * strides[i] for i in range(n)) + tuple(st[2 + i] * dilations[i] for i in range(n))
    return np.lib.stride_tricks.as_strided(x, shape, strides_, writeable=False)


_WINDOW_BUDGET = 1 << 25   # bytes of windows copied at once (the im2col matrices of bands of rows)
_ROWS_EACH = 8             # output rows each thread takes at least, else the threads share channels


def correlate(padded, weight, strides, dilations, groups: int, bias=None):
    """(N, C, *spatial) padded input with (O, C / groups, *k) weights, plus `bias` (O,) when
    given -> (N, O, *out).
    For each image, the windows laid out as a (groups, C/groups * k, out) matrix (a copy, none
    for a 1x1 kernel of stride 1) and one batched matrix product with the (groups, O/groups,
    C/groups * k) weights gives the output in its own layout; taken a band of output rows at a
    time, so the copies stay within _WINDOW_BUDGET. With threads lent to the run, the bands are
    shared among them, each thread copying its own bands' windows, multiplying them and adding
    the bias to its part of the output while it is in cache."""
    n_spatial = padded.ndim - 2
    kernel_shape = weight.shape[2:]
    win = windows(padded, kernel_shape, strides, dilations)         # N, C, *out, *k
    n, c = padded.shape[:2]
    o_total = weight.shape[0]
    if c % groups or o_total % groups or weight.shape[1] != c // groups:
        raise RunError(f"weights {weight.shape} do not fit {c} input channels in {groups} group(s)")
    out = win.shape[2:2 + n_spatial]
    dtype = np.result_type(padded.dtype, weight.dtype)
    y = np.empty((n, o_total) + out, dtype)
    cg, og = c // groups, o_total // groups
    k = math.prod(kernel_shape)
    w = weight.reshape(groups, og, cg * k).astype(dtype, copy=False)
    if bias is not None:
        bias = np.broadcast_to(bias.reshape(-1), (o_total,)).reshape(groups, og, 1).astype(dtype, copy=False)
    rest = math.prod(out[1:])
    # (C, *out, *k) -> (C, *k, *out): each window's elements beside their channel
    order = (0,) + tuple(range(1 + n_spatial, 1 + 2 * n_spatial)) + tuple(range(1, 1 + n_spatial))
    macs = n * o_total * cg * k * math.prod(out)
    share = parallel.threads(macs, parallel.PIECE)
    row_bytes = c * k * rest * win.itemsize                     # one output row's windows
    band = max(1, _WINDOW_BUDGET // share // max(row_bytes, 1))     # each thread one band at a time
    if share > 1 and n < share:
        if out[0] * n < _ROWS_EACH * share and out[0] * row_bytes <= _WINDOW_BUDGET:
            # too few rows to share evenly, and an image's windows are a small copy
            return _by_channels(win, w, bias, y, order, share)
        band = min(band, -(-out[0] * n // share))                   # a band for every thread
    bands = [(i, top) for i in range(n) for top in range(0, out[0], band)]

    def run(start: int, stop: int) -> None:
        for i, top in bands[start:stop]:
            rows = min(band, out[0] - top)
            cols = win[i][:, top:top + rows].transpose(order).reshape(groups, cg * k, rows * rest)
            part = y[i].reshape(groups, og, -1)[:, :, top * rest:(top + rows) * rest]
            np.matmul(w, cols, out=part)
            if bias is not None:
                part += bias
    parallel.bands(len(bands), run, share, macs)
    return y


def _by_channels(win, w, bias, y, order, share: int):
    """correlate for an output of few rows (whose copy is small): each image's windows copied
    at once (the input channels' shared among the threads), then the output channels shared."""
    groups, og, depth = w.shape
    for i in range(y.shape[0]):
        laid = win[i].transpose(order)
        cols = np.empty(laid.shape, laid.dtype)
        parallel.split(len(laid), lambda start, stop, cols=cols, laid=laid: np.copyto(cols[start:stop], laid[start:stop]), share)
        cols = cols.reshape(groups, depth, -1)
        flat = y[i].reshape(groups, og, -1)

        def run(start: int, stop: int, cols=cols, flat=flat) -> None:
            np.matmul(w[:, start:stop], cols, out=flat[:, start:stop])
            if bias is not None:
                flat[:, start:stop] += bias[:, start:stop]
        parallel.split(og, run, share)
    return y


@kernel("conv")
def conv(a):
    return _conv(a, wide(a("weight")))


@kernel("conv_quantized")
def conv_quantized(a):
    """conv with a uint8 weight: weight * quant_scale + quant_bias (linear quantization), the
    scale and bias one value or one per output channel."""
    kind = str(a.scalar("quantization_type"))
    if kind != "linear":
        raise RunError(f"conv_quantized runs quantization_type linear only, not {kind!r}: the op's "
                       "definition does not say how a table is given (only a scale and a bias)")
    q = wide(a("weight"))

    def per_channel(v):
        v = wide(v)
        return v.reshape((-1,) + (1,) * (q.ndim - 1)) if v.ndim == 1 and v.size == q.shape[0] else v
    return _conv(a, q * per_channel(a("quant_scale")) + per_channel(a("quant_bias")))


# The settings a conv's path follows from besides its input's and weight's shapes.
_SETTINGS = ("strides", "dilations", "groups", "pad_type", "pad")


def _conv(a, weight):
    x = np.asarray(a("x"))
    xf = wide(x)              # computed in fp32 at least
    n = x.ndim - 2
    kernel_shape = weight.shape[2:]
    bias = a("bias", None)
    bias = None if bias is None else wide(bias)
    native = usable(a, xf)
    key = (xf.shape, xf.dtype, weight.shape, weight.dtype, native is not None, parallel.sharing())
    strides, dilations, groups, around, path = a.planned(key, lambda: _path(a, native, xf, weight), _SETTINGS)
    # an add folded in (fusion.py): the C kernels add its other input to each part in fp32;
    # else (fp16 after the cast, as the add op would) to the whole output
    residual = a.residual
    added = residual is None or _adds_in_c(path, x, residual)
    # a relu folded in: the C kernels apply it to each part in fp32 after the add; else to the
    # whole output
    in_parts = a.relu and x.dtype == np.float32 and added
    if type(path) is winograd.Plan and not path.in_c:
        y = winograd.correlate(a, native, xf, weight, path, bias, in_parts)
    elif path is not None:
        a.allow_each(path.needs)
        compute = (winograd if type(path) is winograd.Plan else conv_bands).caller(native, weight, path, bias, in_parts)
        y = compute(xf, residual if added else None)
        # the C call alone, with the folded relu and add, where it keeps no array of its own
        # (a weight made at each run, an fp16 one widened or a quantized one, would stay held)
        if added and in_parts == a.relu and xf is x and weight is a("weight") and weight.flags.c_contiguous:
            a.replayable_big(compute, "x")
    else:
        a.allow(x.shape[:2] + tuple(n + b + e for n, (b, e) in zip(x.shape[2:], around)), 4, "the padded input")
        inside = padded(xf, around) if any(b or e for b, e in around) else xf
        a.allow(windows(inside, kernel_shape, strides, dilations).shape[:2 + n], 8, "the output")
        y = correlate(inside, weight, strides, dilations, groups, bias)
        in_parts = False
    y = y.astype(x.dtype, copy=False)
    if not added:
        y = _add(a, y, residual)
    return fusion.relu(y) if a.relu and not in_parts else y


def _adds_in_c(path, x, residual) -> bool:
    """Whether the C kernels of `path` add `residual` to the conv's output as they write it:
    fp32, C-contiguous, of the output's shape."""
    return (path is not None and path.in_c and x.dtype == np.float32 and type(residual) is np.ndarray
            and residual.dtype == np.float32 and residual.shape == path.shape and residual.flags.c_contiguous)


def _add(a, y, residual):
    """y + residual, the add folded into this conv (fusion.py), as its kernel computes it: into
    y (the conv's own) where the result has y's shape and dtype, else broadcast anew within
    --max-memory."""
    other = np.asarray(residual)
    shape = np.broadcast_shapes(y.shape, other.shape)
    if shape == y.shape and np.result_type(y, other) == y.dtype:
        return np.add(y, other, out=y)
    a.allow(shape, 8)
    return np.add(y, other)


def _path(a, native, x, weight) -> tuple:
    """A conv's settings (strides, dilations, groups, the padding around each spatial dim) and
    its path: winograd's plan, conv_bands' plan, or None for NumPy's correlate."""
    n = x.ndim - 2
    kernel_shape = weight.shape[2:]
    strides = a.ints("strides", None) or [1] * n
    dilations = a.ints("dilations", None) or [1] * n
    groups = a.scalar("groups", 1)
    around = pads(a, x.shape[2:], kernel_shape, strides, dilations)
    path = winograd.plan(native, x, weight, strides, dilations, groups, around)
    if path is None:
        path = conv_bands.plan(native, x, weight, strides, dilations, groups, around)
    return strides, dilations, groups, around, path


@kernel("conv_transpose")
def conv_transpose(a):
    x = np.asarray(a("x"))
    weight = wide(a("weight"))         # (C_in, C_out / groups, *k)
    n = x.ndim - 2
    kernel_shape = weight.shape[2:]
    strides = a.ints("strides", None) or [1] * n
    dilations = a.ints("dilations", None) or [1] * n
    groups = a.scalar("groups", 1)
    # A transposed convolution is a convolution of the input dilated by the strides, padded by
    # (k - 1) * d, with the kernel flipped and its in/out channels swapped.
    dilated_shape = x.shape[:2] + tuple((s - 1) * st + 1 for s, st in zip(x.shape[2:], strides))
    full = [((k - 1) * d, (k - 1) * d) for k, d in zip(kernel_shape, dilations)]
    padded_shape = dilated_shape[:2] + tuple(n + b + e for n, (b, e) in zip(dilated_shape[2:], full))
    a.allow(padded_shape, 4, "the input dilated by the strides")
    a.allow((x.shape[0], weight.shape[1] * groups) + padded_shape[2:], 8, "the output")
    dilated = np.zeros(dilated_shape, np.float32)
    dilated[(slice(None), slice(None)) + tuple(slice(None, None, st) for st in strides)] = wide(x)
    inside = padded(dilated, full)
    c_in = x.shape[1]
    per_in = c_in // groups
    flipped = weight[(slice(None), slice(None)) + (slice(None, None, -1),) * n]
    # (C_in, C_out/g, *k) -> (C_out, C_in/g, *k): each group's in/out swapped, groups kept in order
    swapped = np.concatenate([np.swapaxes(flipped[g * per_in:(g + 1) * per_in], 0, 1) for g in range(groups)])
    y = correlate(inside, swapped, [1] * n, dilations, groups)
    # crop what the padding asked for, or to output_shape
    pad_type = str(a.scalar("pad_type", "valid"))
    if pad_type == "custom":
        p = a.ints("pad", None) or [0] * (2 * n)
        crop = [(p[2 * i], p[2 * i + 1]) for i in range(n)]
    elif pad_type in ("same", "same_lower"):
        crop = []
        for size, s in zip(y.shape[2:], strides):
            total = max(size - x.shape[2 + len(crop)] * s, 0)
            small, big = total // 2, total - total // 2
            crop.append((big, small) if pad_type == "same_lower" else (small, big))
    else:
        crop = [(0, 0)] * n
    y = y[(slice(None), slice(None)) + tuple(slice(b, y.shape[2 + i] - e) for i, (b, e) in enumerate(crop))]
    shape = a.ints("output_shape", None)
    if shape is not None:
        y = y[(slice(None), slice(None)) + tuple(slice(0, s) for s in shape[-n:])]
    bias = a("bias", None)
    if bias is not None:
        y = y + wide(bias).reshape((1, -1) + (1,) * n)
    return y.astype(x.dtype)
