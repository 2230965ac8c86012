"""max_pool and avg_pool over 2-D: padding first (-inf for max, 0 for average), then the
dialect's max_pool_2d or sum_pool_2d; the average divides by the window's count, with or
without the padding as exclude_padding_from_average says (counts worked out ahead)."""
from __future__ import annotations

import numpy as np

from ..errors import PortError
from ..table import lowers
from .common import binary, name_of
from .conv import padded, pads


def _window(low, op, x):
    if len(x.shape) != 4:
        raise PortError(f"{op.type} over {len(x.shape) - 2} spatial dims has no Core AI lowering (2-D does)")
    kernel = [int(k) for k in np.asarray(low.known_value(op, "kernel_sizes")).reshape(-1)]
    strides = [int(s) for s in np.asarray(low.known_value(op, "strides", np.ones(2))).reshape(-1)]
    if bool(low.known_value(op, "ceil_mode", False)):
        raise PortError(f"{op.type} with ceil_mode has no Core AI lowering")
    return kernel, strides, pads(low, op, x.shape[2:], kernel, strides, [1, 1])


@lowers("max_pool")
def max_pool(low, op):
    x = low.tensor(op, "x")
    kernel, strides, p = _window(low, op, x)
    xp = padded(low, x, p, -np.inf)
    out = low.out(op)
    y = low.emit("max_pool_2d", [xp, low.uints(kernel, "kernel"), low.uints(strides, "strides"),
                                 low.uints([1, 1], "dilation"),
                                 low.constant(np.asarray(False), "bool", "ceil_mode")], out, hint=name_of(op))
    low.bind(op, y)


@lowers("avg_pool")
def avg_pool(low, op):
    x = low.tensor(op, "x")
    kernel, strides, p = _window(low, op, x)
    xp = padded(low, x, p)
    out = low.out(op)
    s = low.emit("sum_pool_2d", [xp, low.uints(kernel, "kernel"), low.uints(strides, "strides"),
                                 low.uints([1, 1], "dilation")], out)
    if bool(low.known_value(op, "exclude_padding_from_average", False)):
        ones = np.pad(np.ones(x.shape[2:]), p)
        h, w = out[1][2:]
        counts = np.array([[ones[i * strides[0]:i * strides[0] + kernel[0], j * strides[1]:j * strides[1] + kernel[1]].sum()
                            for j in range(w)] for i in range(h)])
        low.bind(op, binary(low, "divide", s, low.constant(counts, x.dtype, "counts"), hint=name_of(op)))
        return
    low.bind(op, binary(low, "divide", s, low.constant(np.asarray(float(np.prod(kernel))), x.dtype, "count"),
                        hint=name_of(op)))

