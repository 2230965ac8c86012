"""Moving blocks of pixels between the spatial dims and the channel or batch dim. The
depth/space and space/batch ops order blocks as TensorFlow does (block-major: the block's
offset outside the channel), pixel_shuffle/unshuffle as PyTorch does (channel-major)."""
from __future__ import annotations

import numpy as np

from ..errors import RunError
from ..registry import kernel


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
