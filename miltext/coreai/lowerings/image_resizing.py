"""upsample_bilinear: the dialect's `interpolate` (linear) over the last two dims. It samples
input coordinate (o + 0.5 - offset) / scale - 0.5, so each of MIL's rules is a (scale, offset):
half-pixel centers (the factor, 0), align corners ((out-1)/(in-1), (1-scale)/2), and the
default o / factor (the factor, (1-factor)/2)."""
from __future__ import annotations

import numpy as np

from ..table import lowers
from .common import name_of


@lowers("upsample_bilinear")
def upsample_bilinear(low, op):
    x = low.tensor(op, "x")
    dtype, shape = low.out(op)
    factors = [float(low.known_value(op, k, 1.0)) for k in ("scale_factor_height", "scale_factor_width")]
    align = bool(low.known_value(op, "align_corners", True))
    half = bool(low.known_value(op, "half_pixel_centers", not align))
    scales, offsets = [], []
    for size, out, factor in zip(x.shape[-2:], shape[-2:], factors):
        if align:
            scale = (out - 1) / (size - 1) if size > 1 else 1.0
        else:
            scale = factor
        scales.append(scale)
        offsets.append(0.0 if half and not align else (1 - scale) / 2)
    lead = len(x.shape) - 2
    operands = [x, low.ints(shape, "output_shape"),
                low.constant(np.asarray([1.0] * lead + scales, np.float32), "fp32", "scale"),
                low.constant(np.asarray([0.0] * lead + offsets, np.float32), "fp32", "offset")]
    low.bind(op, low.emit("interpolate", operands, (dtype, shape),
                          "interpolation_mode = #coreai.interpolation_mode<linear>", hint=name_of(op)))
