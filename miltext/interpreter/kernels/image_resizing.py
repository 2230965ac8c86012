"""Resampling of the last two dims: upsample_* by scale factors, resize_* to a size, with the
coordinate rules (align_corners, half_pixel_centers, sampling_mode) of their definitions."""
from __future__ import annotations

import numpy as np

from ..errors import RunError
from ..registry import kernel
from .linear import wide


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


def _resized(a, x, sizes):
    """RunError unless x with its last len(sizes) dims resized to `sizes` fits in --max-memory
    (computed in fp64 at most)."""
    a.allow(x.shape[:x.ndim - len(sizes)] + tuple(int(n) for n in sizes), 8)


def _bilinear(a, sizes, rule, scales=(None, None)):
    x = np.asarray(a("x"))
    _resized(a, x, sizes)
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
    sizes = (int(x.shape[-2] * sh), int(x.shape[-1] * sw))
    _resized(a, x, sizes)
    return _nearest(x, sizes, (sh, sw))


@kernel("resize_nearest_neighbor")
def resize_nearest_neighbor(a):
    x = np.asarray(a("x"))
    h, w = a.scalar("target_size_height"), a.scalar("target_size_width")
    _resized(a, x, (h, w))
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
    _resized(a, x, [shape[len(shape) - count + i] or x.shape[x.ndim - count + i] for i in range(count)])
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


def _reflect(v, lo: float, hi: float):
    """`v` folded into [lo, hi] by reflecting at both ends."""
    span = hi - lo
    if span <= 0:
        return np.full_like(v, lo)
    v = np.abs(v - lo) % (2 * span)
    return np.where(v > span, 2 * span - v, v) + lo


def _pixels(v, size: int, mode: str, align: bool):
    """Coordinates in `mode` as pixel positions along a dim of `size` (0 and size - 1 the
    centers of the first and last pixels)."""
    if mode == "unnormalized":
        return v
    if mode == "normalized_minus_one_to_one":
        return (v + 1) / 2 * (size - 1) if align else ((v + 1) * size - 1) / 2
    if mode == "normalized_zero_to_one":
        return v * (size - 1) if align else v * size - 0.5
    raise RunError(f"coordinates_mode {mode!r} is none resample knows (unnormalized, "
                   "normalized_minus_one_to_one, normalized_zero_to_one)")


def _grid_sample(x, px, py, sampling: str, padding: str, pad_value):
    """x [B, C, H, W] read at pixel positions px, py [B, H2, W2]: [B, C, H2, W2]."""
    h, w = x.shape[-2:]
    if padding == "border":
        px, py = np.clip(px, 0, w - 1), np.clip(py, 0, h - 1)
    elif padding == "reflection":     # about the edge pixels: |1, 2, 3| -> 2, 3, 2, 1, 2, 3, 2, 1
        px, py = _reflect(px, 0, w - 1), _reflect(py, 0, h - 1)
    elif padding == "symmetric":      # about the image's edges: |1, 2, 3| -> 2, 1, 1, 2, 3, 3, 2
        px, py = _reflect(px, -0.5, w - 0.5), _reflect(py, -0.5, h - 0.5)
    elif padding != "constant":
        raise RunError(f"padding_mode {padding!r} is none resample knows (constant, border, reflection, symmetric)")
    batch = np.arange(x.shape[0]).reshape(-1, 1, 1)

    def read(iy, ix):
        inside = (ix >= 0) & (ix <= w - 1) & (iy >= 0) & (iy <= h - 1)
        got = x[batch, :, np.clip(iy, 0, h - 1), np.clip(ix, 0, w - 1)]    # [B, H2, W2, C]
        return np.where(inside[..., None], got, pad_value)

    if sampling == "nearest":
        out = read(np.rint(py).astype(np.int64), np.rint(px).astype(np.int64))
    elif sampling == "bilinear":
        x0, y0 = np.floor(px), np.floor(py)
        fx, fy = (px - x0)[..., None], (py - y0)[..., None]
        x0, y0 = x0.astype(np.int64), y0.astype(np.int64)
        out = (read(y0, x0) * (1 - fx) + read(y0, x0 + 1) * fx) * (1 - fy) + \
            (read(y0 + 1, x0) * (1 - fx) + read(y0 + 1, x0 + 1) * fx) * fy
    else:
        raise RunError(f"sampling_mode {sampling!r} is none resample knows (bilinear, nearest)")
    return np.moveaxis(out, -1, 1)


def _sampled(a, x, coords):
    """x read at `coords` ([B, H2, W2, 2], (x, y) in the op's coordinates_mode)."""
    mode, align = str(a.scalar("coordinates_mode")), bool(a.scalar("align_corners"))
    h, w = x.shape[-2:]
    px = _pixels(coords[..., 0], w, mode, align)
    py = _pixels(coords[..., 1], h, mode, align)
    out = _grid_sample(wide(x), px, py, str(a.scalar("sampling_mode")), str(a.scalar("padding_mode")),
                       float(a.scalar("padding_value", 0.0)))
    return out.astype(x.dtype)


@kernel("resample")
def resample(a):
    x = np.asarray(a("x"))
    return _sampled(a, x, np.asarray(a("coordinates"), np.float64))


@kernel("affine")
def affine(a):
    """Each output pixel (x, y), in the normalized coordinates of the output, read at
    (a0 x + a1 y + a2, b0 x + b1 y + b2) of the input."""
    x = np.asarray(a("x"))
    theta = np.asarray(a("transform_matrix"), np.float64).reshape(-1, 2, 3)
    h2, w2 = int(a.scalar("output_height")), int(a.scalar("output_width"))
    a.allow((max(x.shape[0], theta.shape[0]), max(x.shape[1], 2), h2, w2), 8)
    align = bool(a.scalar("align_corners"))

    def axis(n):   # the output's pixel centers in [-1, 1] (its corners' centers when aligned)
        if align:
            return np.linspace(-1, 1, n) if n > 1 else np.zeros(n)
        return (2 * np.arange(n) + 1) / n - 1

    gx, gy = np.meshgrid(axis(w2), axis(h2))
    base = np.stack([gx, gy, np.ones_like(gx)], -1)               # [H2, W2, 3]
    coords = np.einsum("hwk,bjk->bhwj", base, theta)              # [D, H2, W2, 2]
    coords = np.broadcast_to(coords, (x.shape[0],) + coords.shape[1:])
    return _sampled(a, x, coords)


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


def _box_grid(start: float, end: float, out: int, mode: str) -> np.ndarray:
    """Where a box's `out` samples fall between its corners: resize_bilinear's sampling modes
    with the box [start, end] as the input grid [0, Xin - 1]."""
    size = end - start + 1     # the box as Xin
    i = np.arange(out, dtype=np.float64)
    if mode in ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS"):
        if out == 1:
            grid = np.array([0.0 if mode == "STRICT_ALIGN_CORNERS" else (size - 1) / 2])
        else:
            grid = i * ((size - 1) / (out - 1))
    elif mode == "DEFAULT":
        grid = i * (size / out)
    elif mode == "OFFSET_CORNERS":
        delta = max(1.0, size - 1) / out
        grid = 0.5 * delta + i * delta
    elif mode == "UNALIGN_CORNERS":
        grid = (i + 0.5) * (size / out) - 0.5
    else:
        raise RunError(f"sampling_mode {mode!r} is none crop_resize knows ({', '.join(_MODES)})")
    return start + np.clip(grid, 0, size - 1)


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
    if mode not in _MODES:
        raise RunError(f"sampling_mode {mode!r} is none crop_resize knows ({', '.join(_MODES)})")
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
        a.allow(lead + (x.shape[1], a.scalar("target_height", 1), a.scalar("target_width", 1)), x.dtype)
        return np.zeros(lead + (x.shape[1], a.scalar("target_height", 1), a.scalar("target_width", 1)), x.dtype)
    corners = np.stack(_box_corners(np.stack([p[1] for p in pairs]), str(a.scalar("box_coordinate_mode", "CORNERS_HEIGHT_FIRST"))), 1)
    if a.scalar("normalized_coordinates", False):
        corners = corners * np.array([x.shape[-2] - 1, x.shape[-1] - 1] * 2)
    corners = corners * a.scalar("spatial_scale", 1.0)
    pad_value = a.scalar("pad_value", 0.0)
    h, w = a.scalar("target_height", 1), a.scalar("target_width", 1)
    a.allow((len(pairs), x.shape[1], h, w), 8)
    patches = [_sample(x[int(i)], _box_grid(c[0], c[2], h, mode), _box_grid(c[1], c[3], w, mode), pad_value)
               for (i, _), c in zip(pairs, corners)]
    return np.stack(patches).reshape(lead + patches[0].shape)
