"""Show a model or a program as canonical MIL text on stdout.

FILE is a model package (.mlpackage), a model (.mlmodel), a serialized MIL Program (.pb), MIL
text (.mil: miltext's, or the model.mil of Apple's compiler), a compiled model (.mlmodelc, whose
model.mil is read, its weights left alone) or - (text or a serialized program on stdin); a
model shows its model section, then its program. A weight file (weight.bin) shows as a list of
its blobs with their digests. With --dialect
modelmil, the program is written as Apple's compiler writes model.mil (the model section, which
model.mil has no place for, is left out).
"""
from ..progress import Progress
from ..text.dialects import WRITTEN
from . import write_stdout


def add_arguments(p) -> None:
    p.add_argument("file", help=".mlpackage, .mlmodel, .pb, .mil, .mlmodelc (or a weight.bin); - reads "
                                "text or a serialized program from stdin")
    p.add_argument("--weight-digests", action="store_true",
                   help="put a short sha256 of each weight in the weight file beside its reference "
                        "(`# sha256:1a2b3c4d`), so that a changed weight shows in a diff")
    p.add_argument("--dialect", choices=WRITTEN, default="mil",
                   help="mil: miltext's canonical text (the default); modelmil: the model.mil text "
                        "of Apple's compiler (the program only)")


def run(args) -> int:
    if args.dialect != "mil":
        return _print_program(args)
    from ..model.file_text import file_text
    with Progress("print", stages={"reading": 1}) as progress:
        text = file_text(args.file, args.weight_digests, progress)
    write_stdout(text)
    return 0


def _print_program(args) -> int:
    """The program alone, in another dialect."""
    from ..errors import InputError, ProgramError
    from ..model.io import display_name, located, read_model
    from ..text.dialects import print_text
    if args.weight_digests:
        raise InputError(f"--weight-digests writes comments, which {args.dialect} text has no place for")
    with Progress("print", stages={"reading": 1}) as progress:
        program = read_model(args.file, progress).program
    try:
        text = print_text(program, args.dialect)
    except ProgramError as e:
        raise InputError(located(display_name(args.file), e.loc, e.message)) from None
    write_stdout(text)
    return 0
