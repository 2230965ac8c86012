"""A whole model as MIL text: the model section (what the .mlmodel holds around the program, see
`section`), then the program. `@model_path` in the text means the folder of the file."""
from __future__ import annotations

import os
import re

from ..sources import program_file, read_program
from . import Model
from .section import SectionError, located_error, section_text, spec_from_section


def model_text(model: Model, weights=None) -> str:
    """The canonical text of a model; with `weights` (a blobs.Weights), a digest beside each
    blob reference."""
    program = model.program_text()
    text = program if model.spec is None else section_text(model.spec) + ("\n" + program if program else "")
    if weights is not None:
        from .blobs import with_digests
        text = with_digests(text, weights, model.program)
    return text


def read_text_model(path: str) -> Model:
    """A .mil file (or a .pb, which has no model section) as a Model."""
    section, program = read_program(path, with_model=True)
    folder = os.path.dirname(os.path.abspath(program_file(path)))   # a .mlmodelc's model.mil is inside it
    if section is None:
        return Model(program, None, folder)
    try:
        spec = spec_from_section(section, program)
    except SectionError as e:
        with open(path, encoding="utf-8", errors="replace") as f:
            raise located_error(e, path, f.read()) from None
    return Model(program, spec, folder)


def parse_model(text: str, filename: str | None = None, folder: str | None = None) -> Model:
    """MIL text, with or without a model section, as a Model."""
    from ..text.parser import parse
    section, program = parse(text, filename, with_model=True)
    if section is None:
        return Model(program, None, folder)
    try:
        return Model(program, spec_from_section(section, program), folder)
    except SectionError as e:
        raise located_error(e, filename, text) from None


def file_text(path: str, weight_digests: bool | None = False, progress=None) -> str:
    """The canonical text of whatever `path` holds: a model or a program, or the list of blobs of
    a weight file. `weight_digests`: True puts a digest beside each blob reference, None does so
    when the weight files are there, False never."""
    from .blobs import Weights, weights_present
    from .io import read_model
    from .weights import describe, is_weight_file
    if is_weight_file(path):
        return describe(path)
    model = read_model(path, progress)
    if weight_digests is None:
        weight_digests = weights_present(model.program, model.folder)
    if not weight_digests:
        return model_text(model)
    with Weights(model.folder, path) as weights:
        return model_text(model, weights)


# A `#` outside strings: a comment, which the canonical form has no place for.
_COMMENT = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|(#)')


def has_comments(text: str) -> bool:
    return any(m.group(1) for m in _COMMENT.finditer(text))


def canonical_text(text: str, filename: str | None = None) -> str:
    """What `miltext fmt` makes of MIL text: its canonical form, model section included; Apple's
    model.mil dialect stays in its dialect."""
    from ..text.modelmil_words import looks_like_modelmil
    if looks_like_modelmil(text):
        from .. import dumps, loads
        return dumps(loads(text, filename), "modelmil")
    return model_text(parse_model(text, filename))
