"""Any file miltext reads, as text: a model or a program as canonical MIL text, a weight file or a
checkpoint as the list of its tensors, a Core AI model as its MLIR text; and what `miltext
textconv` shows of it for git. The one place that sees every kind of file, apart from the
modules that read each."""
from __future__ import annotations

import os

from .text import model_text


def file_text(path: str, weight_digests: bool | None = False, progress=None, blob_names: bool = False) -> str:
    """The canonical text of whatever `path` holds: a model or a program, or the list of blobs of
    a weight file. `weight_digests`: True puts a digest beside each blob reference, None does so
    when the weight files are there, False never. `blob_names`: a weight file's blobs are named
    by the model that goes with it (weight_names; in a repository, git is asked)."""
    from .checkpoint_text import describe_checkpoint, is_checkpoint
    from .weights import describe, is_weight_file
    if is_weight_file(path):
        if not blob_names:
            return describe(path)   # here: a weight file's text needs neither the object model nor protobuf
        from .weight_names import blob_labels
        return describe(path, blob_labels(path))
    if is_checkpoint(path):
        return describe_checkpoint(path)     # a .npy or .safetensors file: its tensors' digests
    from ..coreai.runtime import asset_text, is_coreai_file
    if is_coreai_file(path):
        return asset_text(path)              # a Core AI model: its MLIR text (miltext[coreai])
    from .io import read_model
    model = read_model(path, progress)
    if weight_digests is not False:   # here: textconv shows no digests, nor loads what makes them
        from .blobs import weights_present
        weight_digests = weight_digests or weights_present(model.program, model.folder)
    if not weight_digests:
        return model_text(model)
    from .blobs import Weights
    with Weights(model.folder, path) as weights:
        return model_text(model, weights)


def textconv_text(path: str) -> str:
    """What `miltext textconv` shows of `path` (see cli/textconv_cmd): its text, or, since git
    shows whatever textconv prints, a line saying why not, with the file's size and digest."""
    try:
        return file_text(path, blob_names=True)
    except Exception as e:  # git shows whatever this prints; a failure must not break `git diff`
        return _unreadable(path, e)


HASHED = 1 << 28   # the largest file whose digest textconv shows: git waits for it


def _unreadable(path: str, error: Exception) -> str:
    """One line saying why, then the size and digest of a regular file (a pipe or a device is
    not read: it could block for ever or never end)."""
    import hashlib  # here: git runs textconv once per file, so start-up counts

    from ..errors import InputError
    from ..files import open_regular
    reason = str(error).split("\n")[0].replace(path, "").lstrip(": ") or type(error).__name__
    text = f"# miltext: not shown as MIL text ({reason})\n"
    try:
        with open_regular(path) as f:
            size = os.fstat(f.fileno()).st_size
            if size > HASHED:
                return text + f"# {size} bytes\n"
            digest = hashlib.sha256()
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    except (OSError, InputError):
        return text
    return text + f"# {size} bytes, sha256:{digest.hexdigest()[:16]}\n"
