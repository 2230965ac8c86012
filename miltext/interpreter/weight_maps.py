"""Weight files memory-mapped, read-only: a blob whose bytes are already the array (fp32, fp16,
whole-byte integers, little-endian) is a view of the map, so its pages are read when a kernel
first touches them, shared with the page cache, and never copied."""
from __future__ import annotations

import mmap
import sys

import numpy as np

from ..files import open_regular


def mapped(maps: dict, path: str, dtype: np.dtype, offset: int, count: int) -> np.ndarray:
    """`count` elements of `dtype` at byte `offset` of the weight file `path` (its record
    already checked to hold them), a read-only view of the file's map kept in `maps`."""
    if sys.byteorder != "little":          # the file is little-endian: a view would be wrong
        dtype = dtype.newbyteorder("<")
    found = maps.get(path)
    if found is None:
        with open_regular(path, "weight file") as f:
            found = maps[path] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    array = np.frombuffer(found, dtype, count, offset)
    return array if array.dtype.isnative else array.astype(array.dtype.newbyteorder("="))


_CHUNK = 1 << 16      # bytes of a weight copied before the map's pages under them are let go


def transposed(weight: np.ndarray) -> np.ndarray:
    """A 2-D `weight` transposed into an array of its own (C order). When `weight` views a
    weight file's map, the map's pages are let go as their rows are copied, so memory holds the
    weight once, not twice (the file stays mapped: a later read brings the pages back)."""
    out = np.empty(weight.shape[::-1], weight.dtype)
    found = _map_of(weight)
    stride = weight.strides[0]
    rows = max(1, _CHUNK // max(stride, 1))
    for at in range(0, weight.shape[0], rows):
        out[:, at:at + rows] = weight[at:at + rows].T
        if found is not None:
            # the chunk, and the one before: a read fault maps the pages around it too
            begin = max(at - rows, 0) * stride
            _let_go(*found, weight.nbytes, begin, (min(at + rows, weight.shape[0])) * stride - begin)
    if found is not None:
        _let_go(*found, weight.nbytes, 0, weight.nbytes)
    return out


def _map_of(array: np.ndarray):
    """(the map `array` views, the byte offset of its first element there), or None."""
    base = array
    while isinstance(base, np.ndarray):
        base = base.base
    base = getattr(base, "obj", base)
    if not isinstance(base, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED") or not array.flags.c_contiguous:
        return None
    start = np.frombuffer(base, np.uint8, 1).ctypes.data
    return base, array.ctypes.data - start


def _let_go(found: mmap.mmap, start: int, size: int, at: int, count: int) -> None:
    """The map's pages holding bytes [at, at + count) of the `size` bytes at `start` dropped
    from memory; a page the weight shares with its neighbours in the file is kept (they read it)."""
    page = mmap.PAGESIZE
    begin = max((start + at) // page * page, -(-start // page) * page)
    end = min(-(-(start + at + count) // page) * page, (start + size) // page * page)
    if end > begin:
        try:
            found.madvise(mmap.MADV_DONTNEED, begin, end - begin)
        except (OSError, ValueError):       # advice only: the copy is right either way
            pass
