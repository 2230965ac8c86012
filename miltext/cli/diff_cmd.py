"""Compare two models or programs as MIL text: a unified diff of their canonical texts.

A and B are each a .mlpackage, .mlmodel, .pb or .mil (or two weight.bin files). A side whose
weight files are there shows a digest beside each blob reference, so a changed weight is a
changed line. Exit status as diff's: 0 when the texts are the same, 1 when they differ, 2 when
an input cannot be read.
"""
import difflib

from ..progress import Progress
from . import write_stdout

ERROR_STATUS = 2  # as diff's


def add_arguments(p) -> None:
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p.add_argument("-U", "--unified", type=int, default=3, metavar="N", help="lines of context (3)")
    p.add_argument("--no-weight-digests", action="store_true", help="no digests beside blob references")


def run(args) -> int:
    from ..model.text import file_text
    digests = False if args.no_weight_digests else None
    with Progress("diff") as progress:
        a = file_text(args.a, digests, progress)
        b = file_text(args.b, digests, progress)
    if a == b:
        return 0
    write_stdout("".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), args.a, args.b,
                                              n=args.unified)))
    return 1
