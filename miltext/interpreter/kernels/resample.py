"""Resampling of the last two dims: upsample_* by scale factors, resize_* to a size, with the
coordinate rules (align_corners, half_pixel_centers, sampling_mode) of their definitions."""
from __future__ import annotations

import numpy as np

from ..errors import RunError
from ..registry import kernel
from .linalg import wide


def _source(out: int, size: int, rule: str, scale: float | None = None) -> np.ndarray:
    """For each output position along a dim, where it reads in the input (a float coordinate)."""
    dst = np.arange(out, dtype=np.float64)
    scale = out / size if scale is None else scale
    if rule == "align_corners":
        return dst * ((size - 1) / (out - 1)) if out > 1 else np.full(out, (size - 1) / 2)
    if rule == "strict_align_corners":
        return dst * ((size - 1) / (out - 1)) if out > 1 else np.zeros(out)
    if rule == "offset_corners":
        delta = max(1, size - 1) / out
        return 0.5 * delta + dst * delta
    if rule == "half_pixel":
        return np.maximum((dst + 0.5) / scale - 0.5, 0)
    if rule == "unaligned":
        return (dst + 0.5) / scale - 0.5
    return dst / scale          # "default": the output's corners on the input's grid


def _linear(x, axis: int, coords: np.ndarray):
    size = x.shape[axis]
    coords = np.clip(coords, 0, size - 1)
    lo = np.floor(coords).astype(np.int64)
    hi = np.minimum(lo + 1, size - 1)
    frac = (coords - lo).reshape([-1 if i == axis % x.ndim else 1 for i in range(x.ndim)])
    return np.take(x, lo, axis=axis) * (1 - frac) + np.take(x, hi, axis=axis) * frac


def _bilinear(a, sizes, rule, scales=(None, None)):
    x = np.asarray(a("x"))
    y = wide(x)
    for axis, out, scale in zip((-2, -1), sizes, scales):
        y = _linear(y, axis, _source(out, x.shape[axis], rule, scale))
    return y.astype(x.dtype)


@kernel("upsample_bilinear")
def upsample_bilinear(a):
    x = np.asarray(a("x"))
    sh, sw = float(a.scalar("scale_factor_height", 1)), float(a.scalar("scale_factor_width", 1))
    sizes = (int(x.shape[-2] * sh), int(x.shape[-1] * sw))
    align = bool(a.scalar("align_corners", True))
    half = bool(a.scalar("half_pixel_centers", not align))
    rule = "align_corners" if align else "half_pixel" if half else "default"
    return _bilinear(a, sizes, rule, (sh, sw))


_MODES = {"STRICT_ALIGN_CORNERS": "strict_align_corners", "ALIGN_CORNERS": "align_corners",
          "DEFAULT": "default", "OFFSET_CORNERS": "offset_corners", "UNALIGN_CORNERS": "unaligned"}


@kernel("resize_bilinear")
def resize_bilinear(a):
    mode = str(a.scalar("sampling_mode", "DEFAULT"))
    if mode not in _MODES:
        raise RunError(f"sampling_mode {mode!r} is not run yet (it runs {', '.join(_MODES)})")
    return _bilinear(a, (a.scalar("target_size_height", 1), a.scalar("target_size_width", 1)), _MODES[mode])


def _nearest(x, sizes, scales):
    for axis, out, scale in zip((-2, -1), sizes, scales):
        src = np.minimum(np.floor(np.arange(out) / scale).astype(np.int64), x.shape[axis] - 1)
        x = np.take(x, src, axis=axis)
    return x


@kernel("upsample_nearest_neighbor")
def upsample_nearest_neighbor(a):
    x = np.asarray(a("x"))
    sh, sw = float(a.scalar("scale_factor_height", 1)), float(a.scalar("scale_factor_width", 1))
    return _nearest(x, (int(x.shape[-2] * sh), int(x.shape[-1] * sw)), (sh, sw))


@kernel("resize_nearest_neighbor")
def resize_nearest_neighbor(a):
    x = np.asarray(a("x"))
    h, w = a.scalar("target_size_height"), a.scalar("target_size_width")
    return _nearest(x, (h, w), (h / x.shape[-2], w / x.shape[-1]))
