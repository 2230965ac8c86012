"""Check MIL programs for what parses but is wrong: names nothing defines, values that do not
fit their types, ops their opset lacks, and more (docs/check.md lists every rule).

FILE is MIL text (.mil, a coremltools print, or - for stdin), a serialized MIL Program (.pb)
or a model (.mlpackage, .mlmodel); blob values are checked against the weights/ folder beside
the text, or the model's own, as `miltext build` finds them. The lines reported for a file that
is not text are those of its canonical text, as `miltext print FILE` shows it. A model section
is checked against the program it describes. Each diagnostic is `file:line:col: severity:
message` with the source line and a caret, notes indented beneath. Exit status: 0 when there is no error (warnings are fine), 1 when there is
one, 2 for a wrong command line.
"""
import os
import sys

from ..checker.diagnostics import Diagnostic
from ..checker.render import render_json, render_text, summary
from ..errors import InputError, ParseError
from ..model.io import display_name, read_model
from ..progress import Progress
from . import write_stdout


def add_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="FILE",
                   help=".mil text, a serialized MIL Program (.pb), a model, or - (text on stdin)")
    p.add_argument("--weights", metavar="PATH",
                   help="the weights folder, .mlpackage or weight.bin that blob values point into "
                        "(without it, the weights/ folder beside FILE, or the model's own)")
    p.add_argument("--format", choices=("text", "json"), default="text",
                   help="text for people (the default), json for tools")
    add_confine_refs(p)


def add_confine_refs(p) -> None:
    p.add_argument("--confine-refs", action="store_true",
                   help="refuse weight references (npy(...), safetensors(...)) that lead out of the "
                        "model's folder: absolute paths, `..`, links (docs/safety.md)")


def run(args) -> int:
    if args.weights is not None and not os.path.exists(args.weights):
        print(f"miltext check: error: --weights {args.weights}: no such file or folder", file=sys.stderr)
        return 2
    diagnostics, sources = [], {}
    with Progress("check", stages={"reading": 2, "checking": 1}) as progress:
        for path in args.files:
            found, sources[display_name(path)] = check_file(path, args.weights, progress, args.confine_refs)
            diagnostics.extend(found)
    if args.format == "json":
        write_stdout(render_json(diagnostics))
    else:
        write_stdout(render_text(diagnostics, sources))
        if diagnostics:
            print(summary(diagnostics), file=sys.stderr)
    return 1 if any(d.is_error for d in diagnostics) else 0


def check_file(path: str, weights: str | None, progress=None, confine_refs: bool = False) -> tuple[list, str | None]:
    """The diagnostics of one file and the text they point into (None when there is none)."""
    from .verify import diagnostics
    name = display_name(path)
    try:
        model = read_model(path, progress)
        model.confine_refs = confine_refs
        return diagnostics(model, name, weights, progress)
    except ParseError as e:
        return [Diagnostic("error", message, line, column, name, "syntax")
                for line, column, message in e.errors], e.text
    except InputError as e:
        message = str(e)
        for head in (name + ": error: ", name + ": ", path + ": error: ", path + ": "):
            if message.startswith(head):
                message = message[len(head):]
                break
        inner = message.split(": ", 1)
        if len(inner) == 2 and inner[0].startswith((name.rstrip("/\\") + os.sep, path.rstrip("/\\") + os.sep)):
            return [Diagnostic("error", inner[1], file=inner[0], rule="input")], None   # a file inside a package
        return [Diagnostic("error", message, file=name, rule="input")], None
