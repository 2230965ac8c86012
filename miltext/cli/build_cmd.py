"""Build MIL text into a model package (.mlpackage), a model (.mlmodel) or a serialized MIL
Program (.pb, deterministic bytes), by the output's suffix.

The text is verified first, as `miltext check` verifies it (weights/ beside the text
included): any error is reported as file:line:col with the source line, and nothing is
written; --no-verify builds it anyway. A model gets the text's model section, or, when the
text has none, a description derived from the main function's inputs and outputs the way
coremltools derives one. A package gets the weight files of the text's folder (`@model_path`
is the folder of FILE), each blob checked against its type. The output is written all at once
or not at all.
"""
import sys

from ..progress import Progress
from .check_cmd import add_confine_refs

STAGES = {"reading": 4, "checking": 2, "inferring": 2, "writing": 2}   # shares of the bar
NO_WEIGHTS = ""     # blob values not checked: the output does not carry weight files


def add_arguments(p) -> None:
    p.add_argument("file", help="the .mil text to build (- reads it from stdin)")
    add_output(p, "the .mlpackage, .mlmodel or .pb to write")
    add_confine_refs(p)


def add_output(p, what: str) -> None:
    """-o and the options of writing a model, as build and pack take them."""
    p.add_argument("-o", "--output", required=True, help=what)
    add_no_verify(p)
    add_force(p)


def add_no_verify(p) -> None:
    p.add_argument("--no-verify", dest="verify", action="store_false",
                   help="write the model even when `miltext check` finds errors in it")


def add_force(p) -> None:
    p.add_argument("--force", action="store_true",
                   help="when -o is a link, write the file it leads to (never a file miltext did not write: docs/safety.md)")


def run(args) -> int:
    from ..errors import InputError
    from ..files import claim_output
    from ..model.io import MLMODEL, PACKAGE, PROGRAM, kind_of, output_owned
    kind = kind_of(args.output)
    if kind not in (PACKAGE, MLMODEL, PROGRAM):
        raise InputError(f"{args.output}: error: build writes a .mlpackage, a .mlmodel or a .pb "
                         "(for text, use `miltext print` or `miltext infer`)")
    output = claim_output(args.output, output_owned(kind), args.force, [args.file])
    return build(args.file, output, kind, args.verify, "build", args.confine_refs)


def build(source: str, output: str, kind: str | None, verify: bool, label: str, confine_refs: bool = False) -> int:
    """Read, verify, make explicit and write: what build and pack do. 1 when verification
    refuses the text (its diagnostics on stderr), else 0. `confine_refs`: see add_confine_refs."""
    from ..model.io import PACKAGE, display_name, kind_of, read_model, write_model
    from .verify import diagnostics, report
    refused, said, name = False, "", display_name(source)
    with Progress(label, stages=STAGES) as progress:
        model = read_model(source, progress)
        model.confine_refs = confine_refs
        if verify:
            # blobs are checked against the weights a package gets; a .pb carries none
            carried = (kind or kind_of(output)) == PACKAGE
            found = diagnostics(model, name, None if carried else NO_WEIGHTS, progress)
            refused, said = report(name, *found)
        if not refused:
            make_explicit(model, source, progress)
            progress.stage("writing")
            write_model(model, output, progress, kind=kind)
    sys.stderr.write(said)
    return 1 if refused else 0


def make_explicit(model, path: str, progress=None) -> None:
    """Text may leave out names, consts and output types (docs/syntax.md, "Hand-written
    programs"): write them in, before anything is built from the program."""
    from ..errors import InputError, ProgramError
    from ..infer import complete, infer
    from ..model.io import TEXT, display_name, kind_of, located
    from ..progress import Silent
    if kind_of(path) not in (TEXT, None):
        return
    progress = progress or Silent()
    program = model.program
    try:
        complete(program)
        progress.stage("inferring", total=_untyped_ops(program))
        infer(program, report=lambda op, family: progress.advance(1))
    except ProgramError as e:
        raise InputError(located(display_name(path), e.loc, e.message)) from None


def _untyped_ops(program) -> int:
    """How many ops have an output the text gives no type: the work inference has to do."""
    from ..ir.walk import operations
    return sum(any(v.type is None for v in op.outputs) for op in operations(program))
