"""The numbers of each weight (`miltext stats --values`): min, max, standard deviation, zeros
and non-finite elements. A dense weight in a weight file is read a slice at a time; a
compressed one is decompressed by the interpreter's kernels, within the run's memory bound."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir import Blob

SLICE = 1 << 20     # elements read at a time


@dataclass
class Summary:
    count: int = 0
    finite: int = 0
    zeros: int = 0
    non_finite: int = 0
    min: float | None = None
    max: float | None = None
    _sum: float = 0.0
    _squares: float = 0.0

    def add(self, values) -> None:
        x = np.asarray(values).reshape(-1)
        if x.dtype.kind not in "biuf":
            return
        x = x.astype(np.float64)
        ok = np.isfinite(x)
        good = x[ok]
        self.count += x.size
        self.finite += good.size
        self.non_finite += int(x.size - good.size)
        self.zeros += int(np.count_nonzero(good == 0))
        if good.size:
            low, high = float(good.min()), float(good.max())
            self.min = low if self.min is None else min(self.min, low)
            self.max = high if self.max is None else max(self.max, high)
            self._sum += float(good.sum())
            self._squares += float(np.dot(good, good))

    @property
    def std(self) -> float | None:
        if not self.finite:
            return None
        mean = self._sum / self.finite
        return math.sqrt(max(self._squares / self.finite - mean * mean, 0.0))

    def as_dict(self) -> dict:
        return {"min": self.min, "max": self.max, "std": self.std, "zeros": self.zeros,
                "non_finite": self.non_finite, "count": self.count}


def summarize(model, weights: list, limits=None) -> dict:
    """index in `weights` -> Summary."""
    from ..interpreter.constants import Constants
    from ..model.blobs import Weights
    found = {}
    with Weights(model.folder, model.source) as files, Constants(model.program, model.folder, limits) as constants:
        for index, w in enumerate(weights):
            summary = found[index] = Summary()
            value = w.ops[0].attributes.get("val") if not w.compressed else None
            if value is not None and isinstance(value.data, Blob):
                reader = files.reader(value.data.file)
                for piece in reader.read_slices(value.data.offset, SLICE):
                    summary.add(piece)
            else:
                summary.add(constants.dense(w.ops, w.name, w.function))
    return found
