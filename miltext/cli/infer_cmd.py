"""Show MIL text with every output type inferred, and every name and const it implies written
out, as canonical text on stdout.

Output types the text leaves out are inferred: by miltext's own rules for the common ops, and
by coremltools' (when it is installed) for the others. An op without `name=` takes its first
output's name; its literal arguments become `const` ops, as `build` writes them. An op whose
types cannot be inferred is an error at its line. FILE - reads the text from stdin.
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
        make_explicit(model, args.file, progress)
    write_stdout(model_text(model))
    return 0
