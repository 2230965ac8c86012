"""The table from op type to kernel. A kernel takes the op's Args and returns its outputs: one
array, or a tuple of arrays for an op with several outputs."""
from __future__ import annotations

from ..op_families import load

_KERNELS: dict = {}
_FAMILIES = f"{__package__}.kernels"     # one module of kernels per op family
_loaded = False


def kernel(*op_types: str):
    def register(fn):
        for op_type in op_types:
            _KERNELS[op_type] = fn
        return fn
    return register


def find(op_type: str):
    global _loaded
    if not _loaded:
        _loaded = load(_FAMILIES)
    return _KERNELS.get(op_type)


def supported() -> list:
    find("")
    return sorted(_KERNELS)
