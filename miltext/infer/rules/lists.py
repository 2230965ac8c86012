"""List ops: a list's type says its element type; writes keep the list's type."""
from __future__ import annotations

from ...ir import ListType, TensorType
from ..errors import InferenceError
from ..operands import misfit
from ..registry import rule
from ..shapes import MAX_ELEMENTS, tensor
from ..symbols import Sym


def _list(ops) -> ListType:
    t = ops.type("ls")
    if not isinstance(t, ListType) or not isinstance(t.element, TensorType):
        raise InferenceError("`ls` is not a list of tensors")
    return t


@rule("make_list")
def make_list(ops):
    dims = [d if isinstance(d, Sym) else int(d)
            for d in (v.reshape(-1)[0] for v in map(_known, ops.values("elem_shape")))]
    length = ops.scalar("init_length", default=1, of=int)
    if isinstance(length, int) and not 0 <= length <= MAX_ELEMENTS:
        raise misfit("init_length", f"init_length must be from 0 to {MAX_ELEMENTS:,}, not {length}")
    return [ListType(tensor(ops.dtype("dtype", default="fp32"), dims), int(length))]


@rule("list_write", "list_scatter")
def list_update(ops):
    return [_list(ops)]


@rule("list_read")
def list_read(ops):
    return [_list(ops).element]


@rule("list_gather")
def list_gather(ops):
    element = _list(ops).element
    indices = ops.tensor("indices")
    return [tensor(element.dtype, indices.shape + element.shape)]


@rule("list_length")
def list_length(ops):
    _list(ops)
    return [tensor("int32", ())]


def _known(value):
    if value is None:
        raise InferenceError("make_list needs a constant elem_shape")
    return value
