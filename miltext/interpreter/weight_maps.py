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
