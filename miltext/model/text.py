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
