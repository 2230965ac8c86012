"""The table from op type to kernel. A kernel takes the op's Args and returns its outputs: one
array, or a tuple of arrays for an op with several outputs."""
from __future__ import annotations

from ..op_families import OpTable

_KERNELS = OpTable(f"{__package__}.kernels")     # op type -> kernel; one module of kernels per op family
kernel = _KERNELS.register      # @kernel("op", ...) in a family module
find = _KERNELS.find            # the kernel of an op type, or None


def supported() -> list:
    return sorted(_KERNELS.full())
