"""The weights a program's blob references point at, for comparing two programs: a digest per
blob (what makes two consts the same), and a numeric summary of a changed weight."""
from __future__ import annotations

import os
from dataclasses import dataclass

from ..errors import InputError
from ..ir import Blob
from ..model.blobs import Weights, blob_path

UNKNOWN = "?"   # the digest of a blob whose weight file is not there


class BlobDigests:
    """Digests of one model's blobs, read from its weight files as they are asked for. A blob
    whose file is not there (no folder, no such regular file) has the digest UNKNOWN, the same
    as any other; a file named out of the model folder, or a broken one, is an InputError, as
    everywhere else."""

    def __init__(self, folder: str | None, source: str | None = None):
        self.weights = Weights(folder, source)
        self._digests: dict = {}
        self._present: dict = {}

    def close(self) -> None:
        self.weights.__exit__(None, None, None)

    def digest(self, blob: tuple) -> str:
        found = self._digests.get(blob)
        if found is None:
            found = self._digests[blob] = self.weights.digest(Blob(blob[1], blob[0])) if self._there(blob[0]) else UNKNOWN
        return found

    def _there(self, file_name: str) -> bool:
        present = self._present.get(file_name)
        if present is None:
            folder = self.weights.folder
            present = self._present[file_name] = folder is not None and os.path.isfile(blob_path(folder, file_name))
        return present

    def read(self, blob: tuple):
        """The blob's MIL dtype and elements (a flat numpy array), or None when they cannot be read."""
        try:
            reader = self.weights.reader(blob[0])
            return reader.info(blob[1]).dtype, reader.read(blob[1])
        except (InputError, OSError, ValueError):
            return None


@dataclass
class WeightChange:
    name: str            # the const's var, as the new program names it
    dtype: str
    shape: tuple | None
    changed: int         # elements that differ
    count: int
    max_abs: float | None  # over the elements finite in both; None: not numbers (or counts differ)
    # elements that became NaN, became ±inf, were NaN and are not, were ±inf and are not: what
    # a difference of numbers cannot show
    non_finite: tuple = (0, 0, 0, 0)

    def text(self) -> str:
        shape = self.shape if self.shape is not None else (self.count,)
        kind = "(" + ", ".join([*map(str, shape), self.dtype]) + ")"
        if self.max_abs is None:
            return f"weight %{self.name} {kind} changed: other elements, not comparable one by one"
        words = [f"{n} {what}" for n, what in zip(self.non_finite, (
            "became NaN", "became inf", "were NaN and are not", "were inf and are not")) if n]
        return (f"weight %{self.name} {kind} changed: {self.changed} of {self.count} elements, "
                f"max abs difference {self.max_abs:.6g}" + "".join(f", {w}" for w in words))


def weight_change(name: str, shape: tuple | None, old, new) -> WeightChange:
    """How blob `new` differs from blob `old` (each BlobDigests.read's answer)."""
    import numpy as np
    dtype = new[0] if new is not None else "?"
    old = old[1] if old is not None else None
    new = new[1] if new is not None else None
    if old is None or new is None or old.shape != new.shape or old.dtype.kind not in "biuf" \
            or new.dtype.kind not in "biuf":
        return WeightChange(name, dtype, shape, 0, 0 if new is None else new.size, None)
    a, b = old.astype(np.float64), new.astype(np.float64)
    nan_a, nan_b, inf_a, inf_b = np.isnan(a), np.isnan(b), np.isinf(a), np.isinf(b)
    differs = ~((a == b) | (nan_a & nan_b))
    delta = np.abs(a - b)[differs & np.isfinite(a) & np.isfinite(b)]
    non_finite = tuple(int(np.count_nonzero(m)) for m in (
        nan_b & ~nan_a, inf_b & ~inf_a, nan_a & ~nan_b, inf_a & ~inf_b))
    max_abs = float(delta.max()) if delta.size else 0.0
    return WeightChange(name, dtype, shape, int(differs.sum()), int(new.size), max_abs, non_finite)
