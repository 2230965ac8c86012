"""The optional C kernels (`_fastkernels`: layer_norm, gelu and softmax over the last axis,
fp32 add, sub and mul, small products, 2-D max pools and Winograd's transforms, on
C-contiguous float32 arrays). A run asks for them once (`loaded`: None where they are not
built or MILTEXT_PURE_PYTHON=1 turns them off); each kernel then asks `usable` whether they
take its array, else the NumPy code runs, to the same results within float32 rounding. The
kernels let go of the GIL: a big array's parts are taken from a counter the run's threads
share (`parallel.by_parts`, `parallel.claimed`), the convolutions and products multiplying
with NumPy's own BLAS (`multiplies`)."""
from __future__ import annotations

import numpy as np

from ..native import pure_python
from . import blas_threads

try:     # by its full name: the module, not the package that is still being imported
    import miltext.interpreter._fastkernels as _fastkernels
except ImportError:  # not built: no C compiler, or a source tree that was never installed
    _fastkernels = None


def loaded():
    """The C kernels module, or None (not built, or turned off by the environment)."""
    return None if _fastkernels is None or pure_python() else _fastkernels


def multiplies(native) -> bool:
    """Whether the C kernels `native` can multiply matrices themselves: given, on first asking,
    the cblas_sgemm of NumPy's bundled OpenBLAS (none where NumPy's BLAS is another)."""
    global _blas
    if _blas is None:
        found = blas_threads.sgemm()
        if found is not None:
            native.use_blas(*found)
        _blas = found is not None
    return _blas


_blas = None        # whether the C kernels were given a BLAS (None: not asked yet)
# Floats a parts kernel's scratch may take at most (its SCRATCH): a kernel asks for less, or
# the NumPy path runs.
SCRATCH = 1 << 28


def usable(a, x):
    """The run's C kernels (Args `a`'s evaluator's) when they take x: a C-contiguous float32
    array with elements; else None."""
    native = a.evaluator.native
    if native is None or type(x) is not np.ndarray or x.dtype != np.float32 or not x.size or not x.flags.c_contiguous:
        return None
    return native
