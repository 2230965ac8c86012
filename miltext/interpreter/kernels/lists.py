"""Lists (make_list and the list_* ops): a Python list of arrays, grown as written."""
from __future__ import annotations

import numpy as np

from ... import dtypes
from ..registry import kernel


@kernel("make_list")
def make_list(a):
    n = a.scalar("init_length", 1)
    shape = a.ints("elem_shape", None)
    dtype = dtypes.by_name(str(a.scalar("dtype", "fp32"))).numpy
    a.allow([n] + list(shape or ()), dtype)
    return [np.zeros(shape or (), dtype) for _ in range(n)]


@kernel("list_length")
def list_length(a):
    return np.int32(len(a("ls")))


@kernel("list_write")
def list_write(a):
    ls = list(a("ls"))
    index = a.scalar("index")
    a.allow([index + 1] + list(np.shape(ls[0]) if ls else ()), np.asarray(a("value")).dtype)
    while len(ls) <= index:
        ls.append(np.zeros_like(ls[0]) if ls else None)
    ls[index] = np.asarray(a("value"))
    return ls


@kernel("list_read")
def list_read(a):
    return a("ls")[a.scalar("index")]


@kernel("list_gather")
def list_gather(a):
    ls = a("ls")
    return np.stack([ls[i] for i in a.ints("indices")])


@kernel("list_scatter")
def list_scatter(a):
    ls = list(a("ls"))
    value = np.asarray(a("value"))
    a.allow([max(a.ints("indices"), default=0) + 1] + list(value.shape[1:]), value.dtype)
    for i, v in zip(a.ints("indices"), value):
        while len(ls) <= i:
            ls.append(np.zeros_like(v))
        ls[i] = v
    return ls
