"""What a model takes on disk, accounted for from the program alone: each weight file's bytes
split into its header, the blobs' records and data (sizes from their types) and the padding
blob storage puts between them; the file's size from `os.stat` (the file is never opened)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..blob_storage import HEADER, RECORD, align
from ..model.blobs import blob_path

MAX_FILES = 100_000     # files of a package or compiled model counted, at most


@dataclass
class WeightFile:
    name: str               # as blob values name it (@model_path/weights/weight.bin)
    path: str | None        # where it is, or None when there is no model folder
    size: int | None        # bytes on disk; None: not there
    blobs: int = 0          # distinct blobs the program refers to
    data: int | None = 0    # bytes of their data (None: a type does not say)
    padding: int = 0        # between blobs, to blob storage's 64-byte alignment
    unreferenced: int = 0   # bytes no blob the program refers to accounts for
    overlaps: bool = False  # blobs whose types say they overlap: the types and the file disagree

    @property
    def accounted(self) -> int | None:
        """header + records + data + padding + unreferenced: the size the program's blobs say
        the file has (None when a size is unknown)."""
        if self.data is None:
            return None
        return HEADER.size + self.blobs * RECORD.size + self.data + self.padding + self.unreferenced


@dataclass
class DiskUsage:
    files: list = field(default_factory=list)       # WeightFiles
    model_files: int | None = None                  # bytes of everything but the weight files
    total: int | None = None                        # bytes of the model on disk, weight files included


def disk_usage(model, weights: list) -> DiskUsage:
    blobs = {}      # file name -> {offset: data bytes}
    for w in weights:
        for part in w.parts:
            if part.blob is not None:
                blobs.setdefault(part.blob[0], {})[part.blob[1]] = part.bytes
    files = [_weight_file(name, model.folder, offsets) for name, offsets in sorted(blobs.items())]
    usage = DiskUsage(files)
    total = _model_size(model.source)
    if total is not None:
        inside = _is_folder(model.source)
        weight_bytes = sum(f.size or 0 for f in files)
        usage.model_files = total - weight_bytes if inside else total
        usage.total = total if inside else total + weight_bytes
    return usage


def _weight_file(name: str, folder: str | None, offsets: dict) -> WeightFile:
    path = blob_path(folder, name) if folder is not None else None
    size = None
    if path is not None:
        try:
            size = os.stat(path).st_size
        except OSError:
            size = None
    found = WeightFile(name, path, size, blobs=len(offsets))
    end = HEADER.size
    for offset in sorted(offsets):
        data = offsets[offset]
        if data is None:
            found.data = None
            return found
        if offset < end:
            found.overlaps = True
        else:
            found.padding += min(align(end), offset) - end
            found.unreferenced += max(offset - align(end), 0)
        found.data += data
        end = max(end, offset + RECORD.size + data)
    if size is not None and size > end:
        tail = size - end
        found.padding += min(tail, align(end) - end)
        found.unreferenced += tail - min(tail, align(end) - end)
    return found


def _is_folder(path: str | None) -> bool:
    return path is not None and os.path.isdir(path)


def _model_size(path: str | None) -> int | None:
    """Bytes of the file `path`, or of every regular file in the folder it is (a package, a
    compiled model); None when it is not there (stdin)."""
    if path is None or not os.path.exists(path):
        return None
    if not os.path.isdir(path):
        return os.stat(path).st_size
    total, seen = 0, 0
    for root, _dirs, names in os.walk(path):
        for name in names:
            seen += 1
            if seen > MAX_FILES:
                return total
            full = os.path.join(root, name)
            if os.path.isfile(full) and not os.path.islink(full):
                total += os.stat(full).st_size
    return total
