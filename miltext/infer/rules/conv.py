"""conv and conv_transpose (N, C, *spatial), and the spatial sizes pooling shares."""
from __future__ import annotations

from ..errors import InferenceError, Unsupported
from ..registry import rule
from ..shapes import tensor
from ..symbols import known


def spatial_out(sizes, kernel, strides, dilations, pad_type: str, pad, ceil_mode=False) -> list:
    """Output sizes of a sliding window over `sizes` (None: unknown)."""
    out = []
    for i, n in enumerate(sizes):
        if not known(n):
            out.append(None)
            continue
        k = (kernel[i] - 1) * dilations[i] + 1
        if pad_type in ("same", "same_lower"):
            out.append(-(-n // strides[i]))
            continue
        total = n + (pad[2 * i] + pad[2 * i + 1] if pad_type == "custom" else 0) - k
        if pad_type not in ("valid", "custom"):
            raise InferenceError(f"unknown pad_type {pad_type!r}")
        out.append((-(-total // strides[i]) if ceil_mode else total // strides[i]) + 1)
    return out


def window(ops, x, kernel) -> tuple:
    """strides, dilations, pad_type and pad of a conv or pool op over input `x`."""
    n = len(x.shape) - 2
    strides = ops.ints("strides", default=None) or [1] * n
    dilations = ops.ints("dilations", default=None) or [1] * n
    pad_type = ops.scalar("pad_type", default="valid", of=str)
    pad = ops.ints("pad", default=None) or [0] * (2 * n)
    if len(kernel) != n:
        raise InferenceError(f"a kernel of {len(kernel)} dims for {n} spatial dims")
    return strides, dilations, pad_type, pad


@rule("conv")
def conv(ops):
    x, weight = ops.tensor("x"), ops.tensor("weight")
    kernel = weight.shape[2:]
    if not all(map(known, kernel)):
        raise Unsupported("a kernel of unknown size")
    strides, dilations, pad_type, pad = window(ops, x, kernel)
    spatial = spatial_out(x.shape[2:], kernel, strides, dilations, pad_type, pad)
    return [tensor(x.dtype, (x.shape[0], weight.shape[0], *spatial))]


@rule("conv_transpose")
def conv_transpose(ops):
    x, weight = ops.tensor("x"), ops.tensor("weight")
    if ops.has("output_shape"):                # the whole shape, when the text says it
        return [tensor(x.dtype, ops.ints("output_shape"))]
    kernel = weight.shape[2:]
    if not all(map(known, kernel)) or not known(weight.shape[1]):
        raise Unsupported("a kernel of unknown size")
    strides, dilations, pad_type, pad = window(ops, x, kernel)
    spatial = []
    for i, n in enumerate(x.shape[2:]):
        k = (kernel[i] - 1) * dilations[i] + 1
        if not known(n):
            spatial.append(None)
        elif pad_type in ("same", "same_lower"):
            spatial.append(n * strides[i])
        else:
            cut = pad[2 * i] + pad[2 * i + 1] if pad_type == "custom" else 0
            spatial.append((n - 1) * strides[i] + k - cut)
    groups = ops.scalar("groups", default=1, of=int)
    return [tensor(x.dtype, (x.shape[0], weight.shape[1] * groups, *spatial))]
