"""cond and while_loop: their outputs are typed by their blocks."""
from __future__ import annotations

from ...ir import TensorType
from ..errors import InferenceError, Unsupported
from ..registry import rule


@rule("cond")
def cond(ops):
    branches = ops.block_outputs
    if len(branches) != 2 or len(branches[0]) != len(branches[1]):
        raise InferenceError("cond needs two blocks with as many outputs each")
    return [_join(a, b) for a, b in zip(*branches)]


@rule("while_loop")
def while_loop(ops):
    if len(ops.op.blocks) != 2:
        raise InferenceError("while_loop needs a condition block and a body block")
    types = [v.type for v in ops.op.blocks[1].inputs]
    if any(t is None for t in types):
        raise Unsupported("untyped loop vars")
    return types


def _join(a, b):
    """The type both branches fit: dims that differ become unknown."""
    if a is None or b is None:
        raise Unsupported("an untyped branch output")
    if a == b:
        return a
    if isinstance(a, TensorType) and isinstance(b, TensorType) and a.dtype == b.dtype \
            and len(a.shape) == len(b.shape):
        return TensorType(a.dtype, [x if x == y else None for x, y in zip(a.shape, b.shape)])
    raise InferenceError("the branches of cond give different types")
