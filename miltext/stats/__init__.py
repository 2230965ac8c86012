"""What is in a model (`miltext stats`): its ops by type, its weights by layer with their
dtypes and compression schemes, and what they take on disk.

    from miltext.model import read_model
    from miltext.stats import model_stats
    stats = model_stats(read_model("Model.mlpackage"))
    stats.weights[0].form            # "4-bit palette, blocks of 16 along axis 0"
    stats.as_dict()                  # what `--json` writes

Everything comes from the program's ops and types, and the sizes of files (`os.stat`): no
weight file is opened, unless `values=True` asks for each weight's numbers (read a slice at
a time, compressed ones decompressed by the interpreter's kernels).
`collect` finds the weights, `schemes` reads a constexpr op's scheme, `storage` accounts for
the bytes of weight files, `values` sums up numbers, `render` and `chart` show it all.
"""
from __future__ import annotations

from dataclasses import dataclass

from .collect import LARGE, Weight, collect, layer_of
from .storage import DiskUsage, disk_usage


@dataclass
class Layer:
    name: str
    weights: int = 0
    params: int = 0
    bytes: int = 0
    compressed: int = 0     # of its weights


@dataclass
class Stats:
    source: str
    op_counts: dict         # op type -> count, most first
    functions: list
    weights: list           # Weights, in program order (a function's after the one before)
    disk: DiskUsage
    values: dict | None = None      # weight index -> values.Summary, with values=True

    @property
    def unique_weights(self) -> list:
        """The weights, each stored tensor counted once (functions of a multifunction model
        share their weights)."""
        seen, found = set(), []
        for w in self.weights:
            key = tuple(p.blob for p in w.parts) if all(p.blob for p in w.parts) else (w.function, w.name)
            if key not in seen:
                seen.add(key)
                found.append(w)
        return found

    def layers(self) -> list:
        by_name = {}
        for w in self.unique_weights:
            layer = by_name.setdefault(w.layer, Layer(w.layer))
            layer.weights += 1
            layer.params += w.params or 0
            layer.bytes += w.bytes or 0
            layer.compressed += w.compressed
        return list(by_name.values())

    def dtypes(self) -> dict:
        """The dense dtype of the weights -> (weights, params)."""
        found = {}
        for w in self.unique_weights:
            n, p = found.get(w.dtype, (0, 0))
            found[w.dtype] = (n + 1, p + (w.params or 0))
        return found

    def large_uncompressed(self) -> list:
        return [w for w in self.unique_weights if not w.compressed and (w.params or 0) >= LARGE]

    @property
    def params(self) -> int:
        return sum(w.params or 0 for w in self.unique_weights)

    @property
    def weight_bytes(self) -> int:
        return sum(w.bytes or 0 for w in self.unique_weights)

    def as_dict(self) -> dict:
        from .render import as_dict
        return as_dict(self)


def model_stats(model, values: bool = False, limits=None) -> Stats:
    """The Stats of a Model (miltext.model.read_model's); `values` reads every weight's numbers
    (`limits`: the interpreter's Limits for decompressing them)."""
    found = collect(model.program)
    counts = dict(sorted(found.op_counts.items(), key=lambda kv: (-kv[1], kv[0])))
    stats = Stats(model.source or "<model>", counts, found.functions, found.weights,
                  disk_usage(model, found.weights))
    if values:
        from .values import summarize
        stats.values = summarize(model, stats.unique_weights, limits)
    return stats


__all__ = ["Stats", "Layer", "Weight", "model_stats", "layer_of", "LARGE"]
