"""NumPy's BLAS threads used when there are cores for them. BLAS threads wait for each other
within every product, so a second thread pays only when the product is big enough to share and
a core is free to run it: a product too small (below SMALL multiply-adds) runs on one thread,
and so does a whole run on a machine whose cores are all busy (its 1-minute load at or above
their count), where the second thread would wait its turn at each product. A run holds one
BLAS thread throughout and lends the others to parallel.py's pool, which shares big products
among its own threads (OpenBLAS's threads spin for ~100 ms after a product, taking the cores
the pool's threads need: they are never woken in a run). Outside a run, big products take
every thread the BLAS was given. Works where NumPy's BLAS is the OpenBLAS its wheels bundle
(the count set for the calling thread only); elsewhere it changes nothing."""
from __future__ import annotations

import ctypes
import glob
import math
import os
import threading
import time
from contextlib import nullcontext
from functools import cache

SMALL = 1 << 22          # multiply-adds: below this a product runs on one thread


@cache
def _openblas():
    """The OpenBLAS NumPy's wheels bundle (a ctypes.CDLL), or None (another BLAS)."""
    import numpy as np
    folder = os.path.dirname(os.path.abspath(np.__file__))
    for path in sorted(glob.glob(os.path.join(folder + ".libs", "lib*openblas*.so*"))
                       + glob.glob(os.path.join(folder, ".dylibs", "lib*openblas*.dylib"))):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        if hasattr(lib, "openblas_set_num_threads_local"):
            return lib
    return None


@cache
def _local_setter():
    """OpenBLAS's openblas_set_num_threads_local (it returns the count it replaces), or None."""
    lib = _openblas()
    if lib is None:
        return None
    fn = lib.openblas_set_num_threads_local
    fn.argtypes, fn.restype = [ctypes.c_int], ctypes.c_int
    return fn


# cblas_sgemm's names in the OpenBLAS builds NumPy's wheels have bundled: 64-bit integers
# (NumPy 2's scipy-openblas64, NumPy 1's openblas64_), then 32-bit ones.
_SGEMMS = (("scipy_cblas_sgemm64_", True), ("cblas_sgemm64_", True), ("scipy_cblas_sgemm", False),
           ("cblas_sgemm", False))


@cache
def sgemm() -> tuple | None:
    """(address, whether its integers are 64-bit) of the bundled OpenBLAS's cblas_sgemm, for
    C kernels that multiply without the GIL; None where NumPy's BLAS is another."""
    lib = _openblas()
    for name, ilp64 in _SGEMMS if lib is not None else ():
        fn = getattr(lib, name, None)
        if fn is not None:
            return ctypes.cast(fn, ctypes.c_void_p).value, ilp64
    return None


class _Threads:
    """The calling thread's BLAS count set to `count` inside, and back after."""
    __slots__ = ("setter", "count", "before")

    def __init__(self, setter, count: int):
        self.setter, self.count, self.before = setter, count, 0

    def __enter__(self):
        self.before = self.setter(self.count)
        return self

    def __exit__(self, *exc):
        self.setter(self.before)


class _Run:
    """One run's context: one BLAS thread throughout, and in `_thread.full` the threads lent
    to the pool: `threads` when given, else the BLAS's (0 when that is one, or the machine is
    busy)."""
    __slots__ = ("setter", "threads", "before", "outer")

    def __init__(self, setter, threads: int | None):
        self.setter, self.threads, self.before, self.outer = setter, threads, 0, None

    def __enter__(self):
        self.before = self.setter(1)
        self.outer = getattr(_thread, "full", None)
        if self.threads is not None:
            _thread.full = self.threads if self.threads > 1 else 0
        else:   # the load asked only when there are threads to lend (5 us of a small model's run)
            _thread.full = 0 if self.before <= 1 or busy() else self.before
        return self

    def __exit__(self, *exc):
        _thread.full = self.outer
        self.setter(self.before)


_thread = threading.local()       # `full`: inside a run, the threads lent to the pool (else None)
_NULL = nullcontext()


def cores() -> int:
    """The cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def busy() -> bool:
    """Whether every core this process may use is taken by others: the 1-minute load average
    less this process's own share of it (a process that has run on two threads for a minute
    loads two cores itself, and must not take that as a busy machine)."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):       # no load average here (Windows)
        return False
    return load - _own_load() >= cores()


class _OwnLoad:
    """This process's share of the load average, kept as the kernel keeps the average (its
    running threads, decayed over a minute): the CPU seconds it used per second of wall time,
    averaged with the same decay."""
    __slots__ = ("cpu", "wall", "load")

    def __init__(self):
        self.cpu, self.wall, self.load = time.process_time(), time.monotonic(), 0.0

    def __call__(self) -> float:
        cpu, wall = time.process_time(), time.monotonic()
        span = wall - self.wall
        if span > 0:
            kept = math.exp(-span / 60)
            self.load = self.load * kept + (cpu - self.cpu) / span * (1 - kept)
            self.cpu, self.wall = cpu, wall
        return self.load


_own_load = _OwnLoad()


def for_run(threads: int | None = None):
    """A context for one run: one BLAS thread, and `threads` - 1 more lent to the pool (None:
    the BLAS's others, unless the machine is busy). Only with OpenBLAS, whose count a thread
    can set for itself; under another BLAS a run keeps to one thread of its own."""
    setter = _local_setter()
    return _NULL if setter is None else _Run(setter, threads)


def lent() -> int:
    """The threads the calling run lends its big work (the pool's): 1 outside a run, on a busy
    machine, or when the BLAS was given one thread."""
    return getattr(_thread, "full", None) or 1


def sized(macs: int):
    """A context for a product of `macs` multiply-adds: in a run, the one BLAS thread it holds
    (the pool shares the big products); outside, one thread when the product is small, every
    thread the caller has when it is big."""
    if getattr(_thread, "full", None) is not None or macs >= SMALL:
        return _NULL
    setter = _local_setter()
    return _NULL if setter is None else _Threads(setter, 1)
