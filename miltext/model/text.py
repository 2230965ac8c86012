"""A whole model as MIL text: the model section (what the .mlmodel holds around the program, see
`section`), then the program. `@model_path` in the text means the folder of the file.
read_program_file is the one way in for a file that holds a program alone (text, or a
serialized program): io.read_model takes it for all but packages and .mlmodel files."""
from __future__ import annotations

import os

from ..files import read_regular
from .core import Model
from .program_files import as_text, check_program_bytes, program_file


def model_text(model: Model, weights=None, program: str | None = None) -> str:
    """The canonical text of a model; with `weights` (a blobs.Weights), a digest beside each
    blob reference; with `program`, that text for the program (an author's, miltext.authored)."""
    from .section import section_text
    program = model.program_text() if program is None else program
    text = program if model.spec is None else section_text(model.spec) + ("\n" + program if program else "")
    if weights is not None:
        from .blobs import with_digests
        text = with_digests(text, weights, model.program)
    return text


def read_program_file(path: str) -> Model:
    """The model in the file `path` names (program_file), read as its suffix says, or by its
    content when the suffix says nothing: text is parsed; a serialized program is checked and
    kept serialized until something asks for it. `@model_path` is the file's folder."""
    path = program_file(path)
    data = read_regular(path)
    folder = os.path.dirname(os.path.abspath(path))
    text = as_text(path, data)
    if text is None:
        check_program_bytes(path, data)
        return Model(folder=folder, source=path, program_proto=data)
    del data  # a big file is not held twice while it is parsed
    return parse_model(text, path, folder)


def _model(section, program, text: str | None, filename, folder) -> Model:
    from .section import SectionError, located_error, spec_from_section
    try:
        spec = None if section is None else spec_from_section(section, program)
    except SectionError as e:
        raise located_error(e, filename, text or "") from None
    model = Model(program, spec, folder)
    model.text, model.section = text, section
    return model


def parse_model(text: str, filename: str | None = None, folder: str | None = None,
                options=None) -> Model:
    """MIL text, with or without a model section, as a Model (`options`: text.dialects.ReadOptions)."""
    from ..text.dialects import READ, parse
    section, program = parse(text, filename, options=options or READ, with_model=True)
    return _model(section, program, text, filename, folder)


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
    import hashlib   # here: git runs textconv once per file, so start-up counts
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
