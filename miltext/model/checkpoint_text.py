"""A checkpoint as text for git's textconv: an `.npy` file or a `.safetensors` file shown as one
line per tensor (name, shape, dtype, digest of its bytes), so that `git diff` and `git log -p`
show which tensor of a checkpoint changed rather than "Binary files differ". The headers are
read as weight references read them (miltext.model.weight_headers), the data a chunk at a time.
"""
from __future__ import annotations

import os

from ..files import open_regular

CHECKPOINT_SUFFIXES = (".npy", ".safetensors")
_CHUNK = 1 << 20


def is_checkpoint(path: str) -> bool:
    return path.lower().endswith(CHECKPOINT_SUFFIXES)


def describe_checkpoint(path: str) -> str:
    from .weight_headers import _npy, _Safetensors  # here: a model's textconv needs neither
    with open_regular(path, "checkpoint") as f:
        size = os.fstat(f.fileno()).st_size
        if path.lower().endswith(".npy"):
            header = _npy(f, size)
            nbytes = size - header.offset
            return (f"# npy: {_type(header)}, {nbytes} bytes, "
                    f"sha256:{_digest(f, header.offset, nbytes)}\n")
        file = _Safetensors(f, size)
        lines = [f"# safetensors: {len(file.entries)} tensors, {size} bytes"]
        for name in sorted(file.entries):
            header = file.tensor(name)
            start, end = file.entries[name]["data_offsets"]
            lines.append(f"{name}: {_type(header)}, sha256:{_digest(f, header.offset, end - start)}")
    return "\n".join(lines) + "\n"


def _type(header) -> str:
    """`(16, 8, fp16)`, as a MIL type is written."""
    return "(" + ", ".join([*(str(d) for d in header.shape), header.dtype]) + ")"


def _digest(f, offset: int, size: int) -> str:
    import hashlib  # here: git runs textconv once per file version, so start-up counts

    from .weights import DIGEST_LENGTH
    h = hashlib.sha256()
    f.seek(offset)
    while size > 0:
        chunk = f.read(min(_CHUNK, size))
        if not chunk:
            break
        h.update(chunk)
        size -= len(chunk)
    return h.hexdigest()[:DIGEST_LENGTH]
