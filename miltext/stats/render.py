"""Stats as a table a person reads at a glance, and as the dict `--json` writes."""
from __future__ import annotations

from ..blob_storage import HEADER, RECORD

BAR = 24    # characters of the widest bar in the layer table


def text(stats, max_weights: int | None = None) -> str:
    from .collect import LARGE
    weights = stats.unique_weights
    compressed = [w for w in weights if w.compressed]
    out = [f"{stats.source}: {_functions(stats.functions)}, {sum(stats.op_counts.values()):,} ops, "
           f"{len(weights):,} weights, {stats.params:,} parameters, {_bytes(stats.weight_bytes)} of weights"
           + (f" ({_bits(stats.weight_bytes * 8 / stats.params)} bits per parameter)" if stats.params else "")]
    out += ["", "ops by type"]
    out += _table([[t, f"{n:,}"] for t, n in stats.op_counts.items()], "<>")
    layers = stats.layers()
    if layers:
        widest = max(layer.bytes for layer in layers) or 1
        out += ["", "weights by layer"]
        rows = [[layer.name, f"{layer.weights:,}", f"{layer.params:,}", _bytes(layer.bytes),
                 f"{layer.compressed}/{layer.weights}", "#" * max(round(BAR * layer.bytes / widest), layer.bytes > 0)]
                for layer in layers]
        out += _table([["layer", "weights", "params", "bytes", "compressed", ""]] + rows, "<>>>><")
    if weights:
        shown = weights if max_weights is None else weights[:max_weights]
        out += ["", "weights"]
        head = ["weight", "shape", "params", "bytes", "bits/param", "stored as"]
        if stats.values is not None:
            head += ["min", "max", "std", "zeros", "non-finite"]
        rows = []
        for w in shown:
            row = [w.name, _shape(w.shape), _count(w.params), _bytes(w.bytes), _bits(w.bits_per_weight), w.form]
            if stats.values is not None:
                s = stats.values[weights.index(w)]
                row += [_num(s.min), _num(s.max), _num(s.std), f"{s.zeros:,}", f"{s.non_finite:,}"]
            rows.append(row)
        out += _table([head] + rows, "<<>>><>>>>>")
        if len(shown) < len(weights):
            out.append(f"  ... {len(weights) - len(shown):,} more (--all shows every weight)")
        out += ["", "dtypes (dense)"]
        out += _table([[d, f"{n:,} weights", f"{p:,} params"] for d, (n, p) in stats.dtypes().items()], "<>>")
        out += ["", "compression"]
        if not compressed:
            out.append("  no weight is compressed (no constexpr_* op)")
        else:
            out.append(f"  {len(compressed):,} of {len(weights):,} weights compressed, "
                       f"{sum(w.params or 0 for w in compressed):,} of {stats.params:,} parameters")
            large = stats.large_uncompressed()
            if large:
                out.append(f"  left uncompressed, {LARGE:,} elements or more:")
                out += _table([[w.name, _shape(w.shape), w.dtype, _bytes(w.bytes)] for w in large], "<<<>", indent=4)
    out += ["", "on disk"]
    for f in stats.disk.files:
        out.append("  " + _weight_file(f))
    if stats.disk.total is not None:
        out.append(f"  model: {stats.disk.total:,} bytes in all, {stats.disk.model_files:,} besides the weight files")
    return "\n".join(out) + "\n"


def _weight_file(f) -> str:
    if f.size is None:
        return f"{f.name}: not there ({f.blobs} blobs refer to it)"
    if f.accounted is None:
        return f"{f.name}: {f.size:,} bytes; {f.blobs} blobs, some of a size their types do not say"
    pieces = f"{HEADER.size} header + {f.blobs} x {RECORD.size} records + {f.data:,} data + {f.padding:,} padding"
    if f.unreferenced:
        pieces += f" + {f.unreferenced:,} no blob of the program refers to"
    agree = "" if f.accounted == f.size and not f.overlaps else \
        f" (the program's types account for {f.accounted:,}: the file is not what they say)"
    return f"{f.name}: {f.size:,} bytes = {pieces}{agree}"


def as_dict(stats) -> dict:
    weights = stats.unique_weights
    found = []
    for i, w in enumerate(weights):
        entry = {"name": w.name, "function": w.function, "layer": w.layer, "dtype": w.dtype,
                 "shape": list(w.shape), "params": w.params, "bytes": w.bytes,
                 "bits_per_param": w.bits_per_weight, "stored_as": w.form,
                 "stages": [s.as_dict() for s in w.stages],
                 "parts": [{"input": p.role, "dtype": p.dtype, "shape": list(p.shape), "bytes": p.bytes,
                            "blob": None if p.blob is None else {"file": p.blob[0], "offset": p.blob[1]}}
                           for p in w.parts]}
        if stats.values is not None:
            entry["values"] = stats.values[i].as_dict()
        found.append(entry)
    return {
        "source": stats.source,
        "functions": stats.functions,
        "ops": stats.op_counts,
        "params": stats.params,
        "weight_bytes": stats.weight_bytes,
        "layers": [vars(layer) for layer in stats.layers()],
        "weights": found,
        "dtypes": {d: {"weights": n, "params": p} for d, (n, p) in stats.dtypes().items()},
        "large_uncompressed": [w.name for w in stats.large_uncompressed()],
        "disk": {"total": stats.disk.total, "model_files": stats.disk.model_files,
                 "weight_files": [{"name": f.name, "size": f.size, "blobs": f.blobs, "data": f.data,
                                   "padding": f.padding, "unreferenced": f.unreferenced,
                                   "accounted": f.accounted} for f in stats.disk.files]},
    }


def _table(rows: list, align: str, indent: int = 2) -> list:
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [c.rjust(w) if a == ">" else c.ljust(w) for c, w, a in zip(row, widths, align.ljust(len(row), "<"))]
        lines.append((" " * indent + "  ".join(cells)).rstrip())
    return lines


def _functions(names: list) -> str:
    return f"{len(names)} function" + ("s" if len(names) != 1 else "")


def _shape(shape) -> str:
    return "(" + ", ".join("?" if type(d) is not int else str(d) for d in shape) + ")"


def _count(n) -> str:
    return "?" if n is None else f"{n:,}"


def _bits(bits) -> str:
    return "?" if bits is None else f"{bits:.2f}"


def _num(x) -> str:
    return "-" if x is None else f"{x:.4g}"


def _bytes(n) -> str:
    if n is None:
        return "?"
    if n < 10_000:
        return f"{n:,} B"
    for unit in ("KB", "MB", "GB", "TB"):
        n /= 1000
        if n < 10_000 or unit == "TB":
            return f"{n:,.1f} {unit}"
    return f"{n} B"
