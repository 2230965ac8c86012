"""The optional C kernels (`_fastkernels`: layer_norm, gelu and softmax over the last axis,
small products, 2-D max pools and Winograd's transforms, on C-contiguous float32 arrays). A run asks for them once (`loaded`: None where they are not
built or MILTEXT_PURE_PYTHON=1 turns them off); each kernel then asks `usable` whether they
take its array, else the NumPy code runs, to the same results within float32 rounding. The
kernels let go of the GIL: a big array's rows are shared among a run's threads
(`parallel.by_rows`)."""
from __future__ import annotations

import numpy as np

from ..native import pure_python

try:     # by its full name: the module, not the package that is still being imported
    import miltext.interpreter._fastkernels as _fastkernels
except ImportError:  # not built: no C compiler, or a source tree that was never installed
    _fastkernels = None


def loaded():
    """The C kernels module, or None (not built, or turned off by the environment)."""
    return None if _fastkernels is None or pure_python() else _fastkernels


def usable(a, x):
    """The run's C kernels (Args `a`'s evaluator's) when they take x: a C-contiguous float32
    array with elements; else None."""
    native = a.evaluator.native
    if native is None or type(x) is not np.ndarray or x.dtype != np.float32 or not x.size or not x.flags.c_contiguous:
        return None
    return native
