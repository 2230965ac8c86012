"""Check MIL programs for what parses but is wrong: names nothing defines, values that do not
fit their types, ops their opset lacks, and more (docs/check.md lists every rule).

FILE is MIL text (.mil, or a coremltools print), a serialized MIL Program (.pb) or a model
(.mlpackage, .mlmodel, checked against its own weights); the lines reported for a file that is
not text are those of its canonical text, as `miltext print FILE` shows it. Each
diagnostic is `file:line:col: severity: message` with the source line and a caret, notes
indented beneath. Exit status: 0 when there is no error (warnings are fine), 1 when there is
one, 2 for a wrong command line.
"""
import os
import sys

from ..checker import check
from ..checker.diagnostics import Diagnostic
from ..checker.render import render_json, render_text, summary
from ..errors import ParseError
from ..errors import InputError
from ..sources import read_source
from ..text.printer import print_program
from . import write_stdout


def add_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help=".mil text or a serialized MIL Program (.pb)")
    p.add_argument("--weights", metavar="PATH",
                   help="the weights folder, .mlpackage or weight.bin that blob values point into "
                        "(without it, blob offsets are not checked)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text for people (the default), json for tools")


def run(args) -> int:
    if args.weights is not None and not os.path.exists(args.weights):
        print(f"miltext check: --weights {args.weights}: no such file or folder", file=sys.stderr)
        return 2
    diagnostics, sources = [], {}
    for path in args.files:
        found, sources[path] = check_file(path, args.weights)
        diagnostics.extend(found)
    if args.format == "json":
        write_stdout(render_json(diagnostics))
    else:
        write_stdout(render_text(diagnostics, sources))
        if diagnostics:
            print(summary(diagnostics), file=sys.stderr)
    return 1 if any(d.is_error for d in diagnostics) else 0


MODEL_SUFFIXES = (".mlpackage", ".mlmodel")


def check_file(path: str, weights: str | None) -> tuple[list, str | None]:
    """The diagnostics of one file and the text they point into (None when there is none)."""
    try:
        if path.rstrip("/\\").lower().endswith(MODEL_SUFFIXES):
            text, own_weights = model_source(path)
            from ..text.parser import parse
            return check(parse(text, path), filename=path, source=text,
                         weights=weights if weights is not None else own_weights), text
        program, text = read_source(path)
    except ParseError as e:
        return [Diagnostic("error", message, line, column, path, "syntax")
                for line, column, message in e.errors], e.text
    except InputError as e:
        message = str(e)
        return [Diagnostic("error", message[len(path) + 2:] if message.startswith(path + ": ") else message,
                           file=path, rule="input")], None
    if text is None:  # a program read from a .pb has no places: check its canonical text instead
        from ..text.parser import parse
        text = print_program(program)
        program = parse(text, path)
    return check(program, filename=path, source=text, weights=weights), text


def model_source(path: str) -> tuple[str, str | None]:
    """A model's text as `miltext print` shows it, and its weights folder (None: it has none)."""
    from ..model import read_model
    from ..model.text import model_text
    model = read_model(path)
    folder = os.path.join(model.folder, "weights") if model.folder else None
    return model_text(model), folder if folder and os.path.isdir(folder) else None
