"""What a run may spend: time (`--timeout`) and memory (`--max-memory`), each checked before the
work starts, so that a tiny hostile program ends in a located error, never a hang or a
MemoryError; and threads (`--threads`). docs/run.md states the defaults."""
from __future__ import annotations

import math
import os
import time
from functools import cache

import numpy as np

from .errors import RunError

DEFAULT_TIMEOUT = 600.0          # seconds; the largest corpus model runs in a few
MEMORY_CEILING = 16 << 30        # the default never asks for more than this, whatever the RAM
BIG = 1 << 20                    # from this size on, the values the run holds are counted too


@cache
def default_max_memory() -> int:
    """Half of this machine's RAM, at most 16 GiB (16 GiB when the RAM is not known); asked
    once a process (each run makes its Limits)."""
    try:
        ram = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return MEMORY_CEILING
    return min(ram // 2, MEMORY_CEILING) if ram > 0 else MEMORY_CEILING


def size_text(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:,.0f} bytes" if unit == "bytes" else f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} EiB"


class Limits:
    """The deadline, the memory bound and the threads of one run (`threads` None: as many as
    the BLAS was given, one on a busy machine; see blas_threads.for_run)."""

    def __init__(self, timeout: float | None = None, max_memory: int | None = None, threads: int | None = None):
        self.timeout = DEFAULT_TIMEOUT if timeout is None else float(timeout)
        self.max_memory = default_max_memory() if max_memory is None else int(max_memory)
        if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
            raise ValueError(f"threads must be a whole number of at least 1, not {threads!r}")
        self.threads = threads
        self.deadline = time.monotonic() + self.timeout
        self.loops: list = []         # the while_loop ops running, innermost last, with their passes

    def check_time(self, op) -> None:
        """A RunError at the innermost running loop (or at `op`) once the deadline has passed."""
        if time.monotonic() <= self.deadline:
            return
        if self.loops:
            loop, passes = self.loops[-1]
            named = f" {loop.name}" if loop.name else ""
            raise RunError(f"while_loop{named} was stopped after {passes[0]:,} passes: the run took longer "
                           f"than {self.timeout:g} s (--timeout)", loop.loc)
        raise RunError(f"the run took longer than {self.timeout:g} s (--timeout); stopped at {op.type}", op.loc)

    def allow(self, shape, itemsize: int, what: str = "a tensor", held=None) -> None:
        """RunError unless a tensor of `shape` (`itemsize` bytes an element) fits in --max-memory
        together with what `held()` says the run keeps (asked only for a big tensor); checked
        before allocating it."""
        dims = [int(d) for d in shape]
        if any(d < 0 for d in dims):
            raise RunError(f"{what} cannot have a negative size {tuple(dims)}")
        need = math.prod(dims) * int(itemsize)
        held = held() if held is not None and need >= BIG else 0
        if need + held > self.max_memory:
            also = f" besides the {size_text(held)} the run holds" if held >= BIG else ""
            raise RunError(f"{what} of shape {tuple(dims)} needs {size_text(need)}{also}, more than "
                           f"--max-memory ({size_text(self.max_memory)})")


def need(shape, itemsize: int, what: str) -> tuple:
    """(shape, itemsize, what, bytes): a tensor's size worked out once (an output's declared
    type, a kernel's plan), for Args.allow_each at each run."""
    shape = tuple(int(d) for d in shape)
    return shape, itemsize, what, math.prod(shape) * itemsize


def held(env) -> int:
    """The bytes of the values `env` (and the scopes it sits in) keeps, each buffer once."""
    seen, total = set(), 0
    stack = []
    scope = env
    while scope is not None:
        stack.extend(dict.values(scope))
        scope = getattr(scope, "outer", None)
    while stack:
        v = stack.pop()
        if isinstance(v, np.ndarray):
            root = v
            while isinstance(root.base, np.ndarray):
                root = root.base
            if id(root) not in seen:
                seen.add(id(root))
                total += root.nbytes
        elif isinstance(v, (list, tuple)):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return total
