"""Show MIL text with every output type inferred, and every name and const it implies written
out, as canonical text on stdout.

Output types the text leaves out are inferred: by miltext's own rules for the common ops, and
by coremltools' (when it is installed) for the others. An op without `name=` takes its first
output's name; its literal arguments become `const` ops, as `build` writes them. An op whose
types cannot be inferred is an error at its line. The comments and blank lines of a .mil file
stay where they were, as `fmt` keeps them. FILE - reads the text from stdin.
"""
from . import write_stdout


def add_arguments(p) -> None:
    p.add_argument("file", help="the .mil text (or any file `print` reads; - reads stdin)")


def run(args) -> int:
    from ..model.io import read_model
    from ..model.text import model_text
    from ..progress import Progress
    from .build_cmd import make_explicit
    with Progress("infer", stages={"reading": 1, "inferring": 1}) as progress:
        model = read_model(args.file, progress)
        notes = _trivia(model)
        make_explicit(model, args.file, progress)
    if notes is None:
        write_stdout(model_text(model))
    else:
        from ..authored.formatter import source_text
        write_stdout(source_text(model, notes))
    return 0


def _trivia(model):
    """The comments and layout of the text the model was read from, when it is miltext's text."""
    from ..authored.trivia import Trivia
    from ..text.dialects import COREMLTOOLS, MODELMIL, detect
    text = model.text  # None for a model read from a binary file
    dialect = None if text is None else detect(text)
    if dialect is None or dialect is MODELMIL:
        return None
    return Trivia(model.program, text, dialect is COREMLTOOLS, section=model.section)
