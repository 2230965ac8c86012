"""Build MIL text into a model package (.mlpackage), a model (.mlmodel) or a serialized MIL
Program (.pb, deterministic bytes), by the output's suffix.

A model gets the text's model section, or, when the text has none, a description derived from
the main function's inputs and outputs the way coremltools derives one. A package gets the
weight files of the text's folder (`@model_path` is the folder of FILE), each blob checked
against its type. Names that nothing defines, values left out as [...] and programs nested
deeper than protobuf reads are errors; the output is written all at once or not at all.
"""
from ..progress import Progress


def add_arguments(p) -> None:
    p.add_argument("file", help="the .mil text to build")
    p.add_argument("-o", "--output", required=True, help="the .mlpackage, .mlmodel or .pb to write")


def run(args) -> int:
    from ..errors import InputError
    from ..model.io import MLMODEL, PACKAGE, PROGRAM, kind_of, read_model, write_model
    kind = kind_of(args.output)
    if kind not in (PACKAGE, MLMODEL, PROGRAM):
        raise InputError(f"{args.output}: error: build writes a .mlpackage, a .mlmodel or a .pb "
                         "(for text, use `miltext print` or `miltext infer`)")
    with Progress("build") as progress:
        model = read_model(args.file, progress)
        make_explicit(model, args.file)
        write_model(model, args.output, progress, kind=kind)
    return 0


def make_explicit(model, path: str) -> None:
    """Text may leave out names, consts and output types (docs/syntax.md, "Hand-written
    programs"): write them in, before anything is built from the program."""
    from ..errors import ProgramError
    from ..infer import make_explicit as explicit
    from ..model.io import TEXT, kind_of, located
    from ..errors import InputError
    if kind_of(path) not in (TEXT, None):
        return
    try:
        explicit(model.program)
    except ProgramError as e:
        raise InputError(located(path, e.loc, e.message)) from None
