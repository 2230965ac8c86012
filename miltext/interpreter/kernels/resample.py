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


@kernel("resize")
def resize(a):
    """iOS17's resize: the last `resized_dims` dims to the sizes at the end of `shape` (0 keeps
    a dim's size), linearly or to the nearest, with resize_bilinear's sampling modes."""
    x = np.asarray(a("x"))
    shape = [int(n) for n in np.asarray(a("shape")).reshape(-1)]
    count = int(a.scalar("resized_dims"))
    interpolation = str(a.scalar("interpolation_mode", "LINEAR"))
    mode = str(a.scalar("sampling_mode", "DEFAULT"))
    if mode not in _MODES:
        raise RunError(f"sampling_mode {mode!r} is none resize knows ({', '.join(_MODES)})")
    if interpolation not in ("LINEAR", "NEAREST_NEIGHBOR"):
        raise RunError(f"interpolation_mode {interpolation!r} is none resize knows (LINEAR, NEAREST_NEIGHBOR)")
    if interpolation == "NEAREST_NEIGHBOR" and mode != "DEFAULT":
        raise RunError(f"resize runs NEAREST_NEIGHBOR with sampling_mode DEFAULT, not {mode!r} yet")
    if not 0 <= count <= min(len(shape), x.ndim):
        raise RunError(f"resized_dims {count} is more than shape's {len(shape)} sizes or x's rank {x.ndim}")
    y = wide(x) if interpolation == "LINEAR" else x
    for i in range(count):
        axis = x.ndim - count + i
        size, out = x.shape[axis], shape[len(shape) - count + i] or x.shape[axis]
        if interpolation == "LINEAR":
            y = _linear(y, axis, _source(out, size, _MODES[mode]))
        else:
            src = np.minimum(np.floor(np.arange(out) * (size / out)).astype(np.int64), size - 1)
            y = np.take(y, src, axis=axis)
    return y.astype(x.dtype)


def _box_corners(boxes, mode: str):
    """(N, 4) boxes in `mode` as (h_start, w_start, h_end, w_end) columns."""
    a, b, c, d = (boxes[:, i] for i in range(4))
    if mode == "CORNERS_HEIGHT_FIRST":
        return a, b, c, d
    if mode == "CORNERS_WIDTH_FIRST":
        return b, a, d, c
    if mode == "CENTER_SIZE_HEIGHT_FIRST":
        return a - c / 2, b - d / 2, a + c / 2, b + d / 2
    if mode == "CENTER_SIZE_WIDTH_FIRST":
        return b - d / 2, a - c / 2, b + d / 2, a + c / 2
    raise RunError(f"box_coordinate_mode {mode!r} is none crop_resize knows")


def _box_grid(start: float, end: float, out: int, strict: bool) -> np.ndarray:
    """The box's first and last sample on its corners (the ALIGN_CORNERS grid over [start, end])."""
    if out == 1:
        return np.array([start if strict else (start + end) / 2])
    return start + np.arange(out) * ((end - start) / (out - 1))


def _sample(image, ys, xs, pad_value):
    """image (C, H, W) read bilinearly at the grid ys x xs; pad_value outside the image."""
    h, w = image.shape[-2:]
    y0 = np.clip(np.floor(ys), 0, h - 1).astype(np.int64)
    x0 = np.clip(np.floor(xs), 0, w - 1).astype(np.int64)
    y1, x1 = np.minimum(y0 + 1, h - 1), np.minimum(x0 + 1, w - 1)
    fy, fx = (np.clip(ys, 0, h - 1) - y0)[:, None], (np.clip(xs, 0, w - 1) - x0)[None, :]
    top = image[:, y0][:, :, x0] * (1 - fx) + image[:, y0][:, :, x1] * fx
    bottom = image[:, y1][:, :, x0] * (1 - fx) + image[:, y1][:, :, x1] * fx
    out = top * (1 - fy) + bottom * fy
    outside = ((ys < 0) | (ys > h - 1))[:, None] | ((xs < 0) | (xs > w - 1))[None, :]
    return np.where(outside, pad_value, out)


@kernel("crop_resize")
def crop_resize(a):
    """Each box's patch of its image resized to the target size; iOS17's boxes/box_indices and
    iOS15's roi ([N, 1, 4 or 5, 1, 1]: with 4, every box on every image)."""
    x = wide(np.asarray(a("x")))
    mode = str(a.scalar("sampling_mode", "DEFAULT"))
    if mode not in ("ALIGN_CORNERS", "STRICT_ALIGN_CORNERS"):
        raise RunError(f"crop_resize runs sampling_mode ALIGN_CORNERS and STRICT_ALIGN_CORNERS, not {mode!r} yet")
    if a.has("boxes"):
        boxes = np.asarray(a("boxes"), np.float64).reshape(-1, 4)
        which = a("box_indices", None)
        pairs = list(zip(np.arange(len(boxes)) if which is None else np.asarray(which).reshape(-1), boxes))
        lead = (len(boxes),)
    else:
        roi = np.asarray(a("roi"), np.float64).reshape(len(np.asarray(a("roi"))), -1)
        if roi.shape[1] == 5:
            pairs, lead = [(int(r[0]), r[1:]) for r in roi], (len(roi), 1)
        else:
            pairs, lead = [(b, r) for r in roi for b in range(x.shape[0])], (len(roi), x.shape[0])
    if not pairs:
        return np.zeros(lead + (x.shape[1], a.scalar("target_height", 1), a.scalar("target_width", 1)), x.dtype)
    corners = np.stack(_box_corners(np.stack([p[1] for p in pairs]), str(a.scalar("box_coordinate_mode", "CORNERS_HEIGHT_FIRST"))), 1)
    if a.scalar("normalized_coordinates", False):
        corners = corners * np.array([x.shape[-2] - 1, x.shape[-1] - 1] * 2)
    corners = corners * a.scalar("spatial_scale", 1.0)
    strict, pad_value = mode == "STRICT_ALIGN_CORNERS", a.scalar("pad_value", 0.0)
    h, w = a.scalar("target_height", 1), a.scalar("target_width", 1)
    patches = [_sample(x[int(i)], _box_grid(c[0], c[2], h, strict), _box_grid(c[1], c[3], w, strict), pad_value)
               for (i, _), c in zip(pairs, corners)]
    return np.stack(patches).reshape(lead + patches[0].shape)
