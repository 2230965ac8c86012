"""The table from op type to kernel. A kernel takes the op's Args and returns its outputs: one
array, or a tuple of arrays for an op with several outputs."""
from __future__ import annotations

import importlib
import pkgutil

_KERNELS: dict = {}
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
        from . import kernels
        for info in pkgutil.iter_modules(kernels.__path__):
            importlib.import_module(f"{kernels.__name__}.{info.name}")
        _loaded = True
    return _KERNELS.get(op_type)


def supported() -> list:
    find("")
    return sorted(_KERNELS)
