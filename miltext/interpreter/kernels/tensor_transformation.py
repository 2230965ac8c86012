"""Shapes and layouts: reshape, transpose, concat, split, slicing, padding, tiling and friends;
and moving blocks of pixels between the spatial dims and the channel or batch dim. The
depth/space and space/batch ops order blocks as TensorFlow does (block-major: the block's
offset outside the channel), pixel_shuffle/unshuffle as PyTorch does (channel-major)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import RunError
from ..registry import kernel


def _x(a):
    x = a("x")
    return x if type(x) is np.ndarray else np.asarray(x)


@kernel("identity")
def identity(a):
    return a("x")


@kernel("reshape")
def reshape(a):
    x = _x(a)
    shape = a.ints("shape")
    if 0 in shape:      # 0 keeps the input's size, defined only when the ranks agree
        if len(shape) != x.ndim:
            raise RunError(f"a 0 in shape {shape} keeps an input dim only when the shape has x's rank ({x.ndim})")
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    return a.replayable(lambda x: x.reshape(shape), "x")(x)


@kernel("reshape_like")
def reshape_like(a):
    x = _x(a)
    return x.reshape(np.asarray(a.many("ref_tensors")[0]).shape)


@kernel("transpose")
def transpose(a):
    perm = a.ints("perm")
    return a.replayable(lambda x: x.transpose(perm), "x")(_x(a))


@kernel("expand_dims")
def expand_dims(a):
    x = _x(a)
    axes = a.ints("axes")
    shape = list(x.shape)
    for axis in sorted(ax % (x.ndim + len(axes)) for ax in axes):
        shape.insert(axis, 1)
    return a.replayable(lambda x: x.reshape(shape), "x")(x)


@kernel("squeeze")
def squeeze(a):
    x = _x(a)
    axes = a.ints("axes", None)
    if axes is None:
        return x.squeeze()
    axes = tuple([ax % x.ndim for ax in axes])
    return a.replayable(lambda x: x.squeeze(axis=axes), "x")(x)


def _joined(a, values):
    """RunError unless the values joined in one tensor fit in --max-memory (a text can name
    one big value many times)."""
    a.allow([sum(v.size for v in values)], max((v.itemsize for v in values), default=1))
    return values


@kernel("concat")
def concat(a):
    # rank-0 values join as one element each (the shape arithmetic of converted transformers)
    values = _joined(a, [np.asarray(v).reshape(1) if np.ndim(v) == 0 else np.asarray(v) for v in a.many("values")])
    axis = a.scalar("axis")
    if a.scalar("interleave", False):
        n = len(values)
        stacked = np.stack(values, axis=axis % values[0].ndim + 1)
        shape = list(values[0].shape)
        shape[axis] *= n
        return stacked.reshape(shape)
    return np.concatenate(values, axis=axis)


@kernel("stack")
def stack(a):
    return np.stack(_joined(a, [np.asarray(v) for v in a.many("values")]), axis=a.scalar("axis"))


@kernel("split")
def split(a):
    x = _x(a)
    axis = a.scalar("axis")
    sizes = a.ints("split_sizes", None)
    if sizes is not None and sum(sizes) == x.shape[axis] and min(sizes, default=0) >= 0:
        lead, at, where = (slice(None),) * (axis % x.ndim), 0, []
        for size in sizes:            # plain slices: np.split's general path costs more than they do
            where.append(lead + (slice(at, at + size),))
            at += size
        return a.replayable(lambda x: tuple([x[w] for w in where]), "x")(x)
    if sizes is not None:
        return tuple(np.split(x, np.cumsum(sizes)[:-1], axis=axis))
    return tuple(np.split(x, a.scalar("num_splits"), axis=axis))


@kernel("slice_by_index")
def slice_by_index(a):
    x = _x(a)
    n = x.ndim
    begin, end = a.ints("begin"), a.ints("end")
    stride = a.ints("stride", None) or [1] * n
    begin_mask = _mask(a, "begin_mask", n)
    end_mask = _mask(a, "end_mask", n)
    squeeze = _mask(a, "squeeze_mask", n)
    index = []
    for i in range(n):
        b = None if begin_mask[i] else begin[i]
        e = None if end_mask[i] else end[i]
        if squeeze[i]:
            index.append(begin[i])
        else:
            index.append(slice(b, e, stride[i]))
    return x[tuple(index)]


def _mask(a, key, n):
    m = a(key, None)
    return [False] * n if m is None else [bool(v) for v in np.asarray(m).reshape(-1)]


@kernel("slice_by_size")
def slice_by_size(a):
    x = _x(a)
    begin, size = a.ints("begin"), a.ints("size")
    return x[tuple(slice(b, None if s == -1 else b + s) for b, s in zip(begin, size))]


@kernel("pad")
def pad(a):
    x = _x(a)
    p = a.ints("pad")
    pairs = [(0, 0)] * (x.ndim - len(p) // 2) + [(p[2 * i], p[2 * i + 1]) for i in range(len(p) // 2)]
    a.allow([n + before + after for n, (before, after) in zip(x.shape, pairs)], x.dtype)
    mode = str(a.scalar("mode", "constant"))
    if mode == "constant":
        return np.pad(x, pairs, constant_values=a.scalar("constant_val", 0.0))
    if mode in ("reflect", "replicate"):
        return np.pad(x, pairs, mode="reflect" if mode == "reflect" else "edge")
    raise RunError(f"pad mode {mode!r} is none pad knows (constant, reflect, replicate)")


@kernel("tile")
def tile(a):
    x, reps = _x(a), a.ints("reps")
    rank = max(x.ndim, len(reps))     # np.tile's rule: the shorter one gets leading ones
    dims = [1] * (rank - x.ndim) + list(x.shape)
    a.allow([n * r for n, r in zip(dims, [1] * (rank - len(reps)) + reps)], x.dtype)
    return np.tile(x, reps)


@kernel("shape")
def shape(a):
    return np.asarray(_x(a).shape, np.int32)


@kernel("fill")
def fill(a):
    shape, dtype = a.ints("shape"), a.out_dtype() or np.float32
    a.allow(shape, dtype)
    return np.full(shape, a.scalar("value", 0.0), dtype)


@kernel("fill_like")
def fill_like(a):
    return np.full(np.asarray(a("ref_tensor")).shape, a.scalar("value", 0.0))


@kernel("range_1d")
def range_1d(a):
    start, end, step = a.scalar("start"), a.scalar("end"), a.scalar("step")
    if not all(math.isfinite(v) for v in (start, end, step)):
        raise RunError(f"start, end and step must be finite numbers, not {start}, {end}, {step}")
    if step == 0:
        raise RunError("step must not be 0")
    count = max(math.ceil((end - start) / step), 0)
    a.allow([count], 8)
    return np.arange(start, end, step)


@kernel("flatten2d")
def flatten2d(a):
    x = _x(a)
    axis = a.scalar("axis", 1) % max(x.ndim, 1)
    return x.reshape(int(np.prod(x.shape[:axis])), -1)


@kernel("reverse")
def reverse(a):
    x = _x(a)
    axes = a.ints("axes", None)
    return np.flip(x, axis=None if axes is None else tuple(axes))


@kernel("band_part")
def band_part(a):
    x = _x(a)
    lower, upper = a.scalar("lower", -1), a.scalar("upper", -1)
    rows, cols = np.indices(x.shape[-2:])
    keep = np.ones(x.shape[-2:], bool)
    if lower >= 0:
        keep &= rows - cols <= lower
    if upper >= 0:
        keep &= cols - rows <= upper
    return np.where(keep, x, 0).astype(x.dtype)


@kernel("sliding_windows")
def sliding_windows(a):
    x = _x(a)
    axis, size, stride = a.scalar("axis") % max(x.ndim, 1), a.scalar("size"), a.scalar("stride", 1)
    win = np.lib.stride_tricks.sliding_window_view(x, size, axis=axis)
    a.allow(win.shape[:axis] + (-(-win.shape[axis] // stride),) + win.shape[axis + 1:], x.dtype)
    win = np.take(win, np.arange(0, win.shape[axis], stride), axis=axis)
    return np.moveaxis(win, -1, axis + 1)


@kernel("slice_update")
def slice_update(a):
    x = np.array(_x(a))
    n = x.ndim
    begin, end = a.ints("begin"), a.ints("end")
    stride = a.ints("stride", None) or [1] * n
    begin_mask, end_mask = _mask(a, "begin_mask", n), _mask(a, "end_mask", n)
    squeeze = _mask(a, "squeeze_mask", n)
    index = tuple(begin[i] if squeeze[i] else slice(None if begin_mask[i] else begin[i],
                                                    None if end_mask[i] else end[i], stride[i])
                  for i in range(n))
    x[index] = np.asarray(a("update")).reshape(x[index].shape)
    return x


@kernel("crop")
def crop(a):
    x = _x(a)
    (top, bottom), (left, right) = a.ints("crop_height"), a.ints("crop_width")
    return x[..., top:x.shape[-2] - bottom, left:x.shape[-1] - right]


@kernel("reverse_sequence")
def reverse_sequence(a):
    x = np.array(_x(a))
    lengths = a.ints("lengths")
    seq, batch = a.scalar("seq_axis", 0) % x.ndim, a.scalar("batch_axis", 0) % x.ndim
    moved = np.moveaxis(x, (batch, seq), (0, 1))     # a view: writing it writes x
    for b, n in enumerate(lengths):
        moved[b, :n] = moved[b, :n][::-1].copy()
    return x


def _x4(a):
    x = np.asarray(a("x"))
    if x.ndim != 4:
        raise RunError(f"x must be rank 4 (N, C, H, W), not rank {x.ndim}")
    return x


def _to_space(x, b: int, block_major: bool):
    """(N, C*b*b, H, W) -> (N, C, H*b, W*b)."""
    n, c, h, w = x.shape
    if c % (b * b):
        raise RunError(f"the channels ({c}) are not a multiple of the block size squared ({b * b})")
    split = (n, b, b, c // (b * b), h, w) if block_major else (n, c // (b * b), b, b, h, w)
    order = (0, 3, 4, 1, 5, 2) if block_major else (0, 1, 4, 2, 5, 3)
    return x.reshape(split).transpose(order).reshape(n, c // (b * b), h * b, w * b)


def _to_depth(x, b: int, block_major: bool):
    """(N, C, H*b, W*b) -> (N, C*b*b, H, W), the inverse of _to_space."""
    n, c, h, w = x.shape
    if h % b or w % b:
        raise RunError(f"the spatial size {(h, w)} is not a multiple of the block size {b}")
    order = (0, 3, 5, 1, 2, 4) if block_major else (0, 1, 3, 5, 2, 4)
    return x.reshape(n, c, h // b, b, w // b, b).transpose(order).reshape(n, c * b * b, h // b, w // b)


kernel("depth_to_space")(lambda a: _to_space(_x4(a), a.scalar("block_size"), True))
kernel("space_to_depth")(lambda a: _to_depth(_x4(a), a.scalar("block_size"), True))
kernel("pixel_shuffle")(lambda a: _to_space(_x4(a), a.scalar("upscale_factor"), False))
kernel("pixel_unshuffle")(lambda a: _to_depth(_x4(a), a.scalar("downscale_factor"), False))


@kernel("space_to_batch")
def space_to_batch(a):
    x = _x4(a)
    (bh, bw), p = a.ints("block_shape"), a.ints("paddings")
    a.allow(x.shape[:2] + (x.shape[2] + p[0] + p[1], x.shape[3] + p[2] + p[3]), x.dtype)
    x = np.pad(x, [(0, 0), (0, 0), (p[0], p[1]), (p[2], p[3])])
    n, c, h, w = x.shape
    if h % bh or w % bw:
        raise RunError(f"the padded spatial size {(h, w)} is not a multiple of the block shape {(bh, bw)}")
    # the batch index is (block row, block column, n), block offsets outermost
    y = x.reshape(n, c, h // bh, bh, w // bw, bw).transpose(3, 5, 0, 1, 2, 4)
    return y.reshape(bh * bw * n, c, h // bh, w // bw)


@kernel("batch_to_space")
def batch_to_space(a):
    x = _x4(a)
    (bh, bw), crop = a.ints("block_shape"), a.ints("crops")
    b, c, h, w = x.shape
    if b % (bh * bw):
        raise RunError(f"the batch ({b}) is not a multiple of the block shape's size ({bh * bw})")
    n = b // (bh * bw)
    y = x.reshape(bh, bw, n, c, h, w).transpose(2, 3, 4, 0, 5, 1).reshape(n, c, h * bh, w * bw)
    return y[:, :, crop[0]:h * bh - crop[1], crop[2]:w * bw - crop[3]]
