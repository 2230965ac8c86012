"""conv, conv_transpose and pooling: an (N, C, spatial...) input, a weight of the same rank
whose channels fit the input's and the groups, a bias per output channel, one kernel size,
stride and dilation per spatial dim."""
from __future__ import annotations

from . import Mistake, rule
from .common import shown


def _spatial(ops, key: str, x) -> int:
    if len(x.shape) < 3:
        raise Mistake(key, f"{ops.op.type} needs an input of rank 3 or more (N, C, spatial dims), "
                           f"not {len(x.shape)}")
    return len(x.shape) - 2


def _per_dim(ops, n: int, *keys) -> None:
    for key in keys:
        values = ops.ints(key, default=None) if ops.has(key) else None
        want = 2 * n if key == "pad" else n
        if values is not None and len(values) != want and not (key == "pad" and not _custom(ops)):
            raise Mistake(key, f"{key} needs {want} values for {n} spatial dims, not {len(values)}")


def _custom(ops) -> bool:
    return ops.scalar("pad_type", default="valid", of=str) == "custom"


def _groups(ops) -> int | None:
    groups = ops.scalar("groups", default=1, of=int)
    if not isinstance(groups, int):
        return None
    if groups < 1:
        raise Mistake("groups", f"groups must be 1 or more, not {groups}")
    return groups


def _x_and_weight(ops, layout: str):
    """x, its weight (of x's rank, its dims laid out as `layout` says) and x's spatial rank."""
    x, weight = ops.tensor("x"), ops.tensor("weight")
    n = _spatial(ops, "x", x)
    if len(weight.shape) != len(x.shape):
        raise Mistake("weight", f"{ops.op.type}'s weight must have rank {len(x.shape)} ({layout}, {n} kernel "
                                f"dims) for x {shown(x)}, not {len(weight.shape)}")
    return x, weight, n


@rule("conv")
def conv(ops):
    x, weight, n = _x_and_weight(ops, "out channels, in channels per group")
    groups = _groups(ops)
    c_in, c_out, per_group = x.shape[1], weight.shape[0], weight.shape[1]
    if groups is not None:
        if c_in is not None and per_group is not None and c_in != per_group * groups:
            what = f" times groups ({groups})" if groups != 1 else ""
            raise Mistake("weight", f"x has {c_in} channels, but weight {shown(weight)} takes {per_group} "
                                    f"input channels{what}")
        if c_out is not None and c_out % groups:
            raise Mistake("groups", f"{c_out} output channels do not divide into {groups} groups")
    _bias(ops, c_out)
    _per_dim(ops, n, "strides", "dilations", "pad")
    _window_fits(ops, "weight", x.shape[2:], weight.shape[2:])


@rule("conv_transpose")
def conv_transpose(ops):
    x, weight, n = _x_and_weight(ops, "in channels, out channels per group")
    groups = _groups(ops)
    if x.shape[1] is not None and weight.shape[0] is not None and x.shape[1] != weight.shape[0]:
        raise Mistake("weight", f"x has {x.shape[1]} channels, but weight {shown(weight)} takes "
                                f"{weight.shape[0]} (its first dim)")
    if groups is not None and weight.shape[1] is not None:
        _bias(ops, weight.shape[1] * groups)
    _per_dim(ops, n, "strides", "dilations", "pad")


def _bias(ops, channels) -> None:
    if not ops.has("bias"):
        return
    bias = ops.tensor("bias")
    if len(bias.shape) != 1 or (channels is not None and bias.shape[0] is not None
                                and bias.shape[0] != channels):
        raise Mistake("bias", f"the bias must be ({channels}), one value per output channel, "
                              f"not {shown(bias)}")


@rule("avg_pool", "max_pool", "l2_pool")
def pool(ops):
    x = ops.tensor("x")
    n = _spatial(ops, "x", x)
    _per_dim(ops, n, "kernel_sizes", "strides", "pad")
    kernel = ops.ints("kernel_sizes", default=None)
    if kernel is not None and len(kernel) == n:
        _window_fits(ops, "kernel_sizes", x.shape[2:], kernel)


def _window_fits(ops, key: str, sizes, kernel) -> None:
    """With pad_type valid (or custom), the kernel, dilated, fits in each padded spatial dim."""
    pad_type = ops.scalar("pad_type", default="valid", of=str)
    if pad_type not in ("valid", "custom"):
        return
    n = len(sizes)
    dilations = (ops.ints("dilations", default=None) if ops.has("dilations") else None) or [1] * n
    pad = (ops.ints("pad", default=None) if pad_type == "custom" and ops.has("pad") else None) or [0] * (2 * n)
    if len(dilations) != n or len(pad) != 2 * n:
        return
    for i, (size, k) in enumerate(zip(sizes, kernel)):
        if None in (size, k, dilations[i], pad[2 * i], pad[2 * i + 1]):
            continue
        reach = (k - 1) * dilations[i] + 1
        if reach > size + pad[2 * i] + pad[2 * i + 1]:
            raise Mistake(key, f"the {ops.op.type} window spans {reach} along spatial dim {i}, but x is "
                               f"only {size} there{' with its padding' if pad_type == 'custom' else ''}")


@rule("batch_norm", "instance_norm")
def per_channel(ops):
    x = ops.tensor("x")
    if len(x.shape) < 2 and ops.op.type == "batch_norm" or len(x.shape) < 3 and ops.op.type == "instance_norm":
        raise Mistake("x", f"{ops.op.type} needs x of rank {2 if ops.op.type == 'batch_norm' else 3} "
                           f"or more (N, C, ...), not {len(x.shape)}")
    for key in ("mean", "variance", "gamma", "beta"):
        if ops.has(key):
            t = ops.tensor(key)
            if len(t.shape) != 1 or (t.shape[0] is not None and x.shape[1] is not None
                                     and t.shape[0] != x.shape[1]):
                raise Mistake(key, f"{key} must be ({x.shape[1]}), one value per channel of x "
                                   f"{shown(x)}, not {shown(t)}")
