"""Bulk work without the cyclic garbage collector.

Reading or writing a large program allocates millions of small objects and no cycles; the
collector would rescan them again and again, which makes the work grow faster than the program.
"""
from __future__ import annotations

import gc
from contextlib import contextmanager


@contextmanager
def bulk():
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
