"""concat, stack and split: sizes along one axis add up, or are shared out."""
from __future__ import annotations

from ...ir import TensorType
from ..errors import InferenceError, Unsupported
from ..registry import rule
from ..shapes import add_dims, axis, tensor


def _tensor_values(ops) -> list:
    """The types of the `values` tuple, when every one is a tensor of known rank."""
    parts = ops.types("values")
    if not parts or not all(isinstance(t, TensorType) and t.rank is None for t in parts):
        raise Unsupported("values of unknown types")
    return parts


@rule("concat")
def concat(ops):
    parts = _tensor_values(ops)
    rank = len(parts[0].shape)
    a = axis(ops.scalar("axis"), rank)
    out = list(parts[0].shape)
    for i in range(rank):
        if i == a:
            out[i] = add_dims(*(t.shape[i] for t in parts))
        else:
            known = {t.shape[i] for t in parts} - {None}
            out[i] = known.pop() if len(known) == 1 else None
    return [tensor(parts[0].dtype, out)]


@rule("split")
def split(ops):
    x = ops.tensor("x")
    a = axis(ops.scalar("axis"), len(x.shape))
    sizes = ops.ints("split_sizes", default=None)
    if sizes is None:
        n = ops.scalar("num_splits")
        size = x.shape[a]
        if size is None:
            raise Unsupported("split of an unknown dim")
        if size % n:
            # coremltools' rule: the last part takes what is left over
            step = -(-size // n)
            sizes = [step] * (n - 1) + [size - step * (n - 1)]
        else:
            sizes = [size // n] * n
    elif x.shape[a] is not None and sum(sizes) != x.shape[a]:
        raise InferenceError(f"split sizes {sizes} do not add up to {x.shape[a]}")
    out = []
    for s in sizes:
        shape = list(x.shape)
        shape[a] = s
        out.append(tensor(x.dtype, shape))
    return out


@rule("stack")
def stack(ops):
    parts = _tensor_values(ops)
    out = list(parts[0].shape)
    out.insert(axis(ops.scalar("axis"), len(out) + 1), len(parts))
    return [tensor(parts[0].dtype, out)]
