"""How the language server's process gets and gives back memory.

The server lives as long as the editor and holds a big program per open text, while every edit,
check and outline makes and drops megabytes of small objects. Python's own allocator (pymalloc)
returns memory to the system only by whole 1 MiB arenas, and an arena with one object left in
it stays, with every page that was ever used in it: after a few outlines of a 10k-op model the
server holds twice the memory it needs. With glibc, the C library's allocator gives back every
free page when asked (malloc_trim), so the server runs on it (PYTHONMALLOC=malloc), and asks
after the work that leaves much garbage.
"""
from __future__ import annotations

import ctypes
import functools
import gc
import os
import sys

M_MMAP_THRESHOLD = -3   # glibc's mallopt parameters
M_ARENA_MAX = -8


def use_the_system_allocator() -> None:
    """Start this process again on the C library's allocator, when that is glibc's and nobody
    chose an allocator (PYTHONMALLOC set, to any value, is left as it is). Done before the
    server reads anything, so the editor's pipes carry on in the new process."""
    if os.environ.get("PYTHONMALLOC") or _glibc() is None or not sys.executable or not sys.orig_argv:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], {**os.environ, "PYTHONMALLOC": "malloc"})
    except OSError:
        pass   # go on as we are: only memory is at stake


def release_memory() -> None:
    """Hand the memory that parsing or a whole check left free back to the system (glibc keeps
    it otherwise), after the work that leaves much garbage: 20-40 ms for a 10k-op program.
    First a full collection, which also empties Python's free lists: thousands of dropped
    tuples, lists and dicts kept for reuse, each pinning a page the trim would give back."""
    gc.collect()
    libc = _glibc()
    if libc is not None:
        libc.malloc_trim(0)


def keep_big_blocks_apart() -> None:
    """Have glibc give each big block (a document's text: every edit makes a new one) pages of
    its own, returned when it is freed. Left to itself, glibc raises this threshold past the
    size of the first such block freed, and the texts after it stay in the heap, a few MB."""
    libc = _glibc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, 128 << 10)
        # one heap for every thread: the whole check's thread (server.MilServer.checker) would
        # otherwise get one of its own, whose pages the findings it keeps hold on to
        libc.mallopt(M_ARENA_MAX, 1)


@functools.cache
def _glibc():
    try:
        libc = ctypes.CDLL(None)
    except (OSError, TypeError):   # TypeError: Windows, where there is no process-wide library
        return None
    return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
