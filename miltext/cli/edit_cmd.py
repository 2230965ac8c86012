"""Edit a model: rename its inputs, outputs and vars, expose an intermediate value as an output,
cut out a submodel, swap an op for another, set a weight from a .npy file, remove an output.

Each edit is made to the program and to the model section (features, function descriptions),
nested blocks included, and names vars as MODEL names them before any edit. Edits that cannot
go together are refused before any is made. The edited model is verified as `build` verifies
(nothing is written on an error; --no-verify writes it anyway), written to OUT, and what changed
is shown as `miltext diff` shows it. See docs/inspect.md.
"""
import argparse
import sys

from ..progress import Progress
from . import write_stdout
from .build_cmd import NO_WEIGHTS, STAGES, add_force, add_no_verify


class _Edit(argparse.Action):
    """Each edit flag appends (kind, its argument) to one list, in command-line order."""

    def __call__(self, parser, namespace, value, option_string=None):
        from ..edit import EditError, parse
        try:
            edit = parse(option_string.lstrip("-"), value)
        except EditError as e:
            parser.error(str(e))
        namespace.edits = [*(namespace.edits or []), edit]


def add_arguments(p) -> None:
    from ..edit.edits import FORMS
    p.add_argument("model", help="the .mlpackage, .mlmodel, .pb or .mil to edit (it is left as it is)")
    p.add_argument("-o", "--output", required=True, help="the .mlpackage, .mlmodel or .pb to write")
    helps = {"rename-input": "rename an input", "rename-output": "rename an output",
             "rename-var": "rename any var (an input or output too)",
             "expose": "make an intermediate value of the top block an output",
             "extract": "keep only what computes the TO vars from the FROM vars, which become the inputs",
             "replace-op": "make the op computing VAR an OPTYPE op, keeping the inputs OPTYPE takes",
             "set-weight": "give the const VAR the values of a .npy file (same shape; its dtype or a cast)",
             "remove-output": "remove an output (the ops computing it stay)"}
    for kind, form in FORMS.items():
        p.add_argument(f"--{kind}", action=_Edit, dest="edits", metavar=form, help=helps[kind])
    p.add_argument("--function", metavar="NAME", help="edit only this function (default: every function "
                                                      "that defines the var an edit names)")
    p.add_argument("-U", "--unified", type=int, default=3, metavar="N", help="lines of context in the diff shown (3)")
    add_no_verify(p)
    add_force(p)


def run(args) -> int:
    from ..edit import EditError, apply, conflicts
    from ..errors import InputError
    from ..files import claim_output
    from ..model.io import MLMODEL, PACKAGE, PROGRAM, display_name, kind_of, output_owned, read_model, write_model
    from ..model.text import model_text
    from .build_cmd import make_explicit
    from .verify import diagnostics, report
    edits = args.edits or []
    if not edits:
        print("miltext edit: error: no edit given (--rename-input, --expose, ... : see miltext edit --help)",
              file=sys.stderr)
        return 2
    name = display_name(args.model)
    try:
        conflicts(edits)     # first: refused whatever else is wrong
    except EditError as e:
        raise InputError(f"{name}: error: {e}") from None
    kind = kind_of(args.output)
    if kind not in (PACKAGE, MLMODEL, PROGRAM):
        raise InputError(f"{args.output}: error: edit writes a .mlpackage, a .mlmodel or a .pb")
    if kind != PACKAGE and any(e.kind == "set-weight" for e in edits):
        raise InputError(f"{args.output}: error: --set-weight puts the weight in a package's weight file: "
                         "write a .mlpackage")
    weights = [e.arg for e in edits if e.kind == "set-weight"]
    output = claim_output(args.output, output_owned(kind), args.force, [args.model, *weights])
    with Progress("edit", stages=STAGES) as progress:
        model = read_model(args.model, progress)
        make_explicit(model, args.model, progress)
        before, folder = model_text(model), model.folder
        try:
            apply(model, edits, args.function)
        except EditError as e:
            raise InputError(f"{name}: error: {e}") from None
        if args.verify:
            found = diagnostics(model, output, None if kind == PACKAGE else NO_WEIGHTS, progress)
            refused, said = report(output, *found)
            if refused:
                sys.stderr.write(said)
                return 1
            sys.stderr.write(said)
        progress.stage("writing")
        write_model(model, output, progress, kind=kind)
    write_stdout(_change(before, name, folder, output, args.unified))
    return 0


def _change(before: str, label: str, folder, output: str, context: int) -> str:
    """What the edits changed, as `miltext diff MODEL OUTPUT` shows it."""
    from ..review import Side, compare
    old, new = Side.from_text(before, label, folder), Side.read(output)
    try:
        return compare(old, new).text(context)
    finally:
        old.close()
        new.close()
