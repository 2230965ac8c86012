"""Compare two models or programs by structure: what was added, removed and changed, as a
unified diff of their canonical texts in which ops that compute the same thing match even when
they were renamed (the renames are summed up on one line), and a changed weight is named by its
const and summed up in numbers.

A and B are each a .mlpackage, .mlmodel, .pb or .mil (or two weight.bin files, which compare as
the lists of their blobs). --text gives the plain unified diff of the two texts instead, a
digest beside each blob reference whose weight file is there. --graph draws the two aligned
(see `miltext graph`). Exit status as diff's: 0 when the two are the same, 1 when they differ,
2 when an input cannot be read. With --git-external (what `miltext git-setup` installs as git's
external diff driver), the seven arguments are git's and the status is 0.
"""
import difflib

from ..progress import Progress
from . import write_stdout

ERROR_STATUS = 2  # as diff's


def add_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="A B",
                   help="the old and the new model (with --git-external: git's seven arguments)")
    p.add_argument("-U", "--unified", type=int, default=3, metavar="N", help="lines of context (3)")
    p.add_argument("--text", action="store_true", help="the plain diff of the two texts, names and all")
    p.add_argument("--no-weight-digests", action="store_true", help="leave weight files unread: no digests beside blob references, "
                        "blobs compared by their types only")
    p.add_argument("--weights", action="store_true",
                   help="only the weights whose representation changed (fp16 to a 4-bit palette, int8 to int4, ...): "
                        "old and new form, bits per parameter, and the reconstruction error of the decompressed values")
    p.add_argument("--graph", action="store_true", help="draw the change instead (to -o FILE: .svg or .dot)")
    p.add_argument("-o", "--output", metavar="FILE", help="with --graph: where to write it (default: DOT on stdout)")
    from .graph_cmd import add_drawing_arguments
    add_drawing_arguments(p)
    p.add_argument("--git-external", action="store_true",
                   help="run as git's external diff driver: PATH OLD-FILE OLD-HEX OLD-MODE NEW-FILE NEW-HEX NEW-MODE")


def run(args) -> int:
    from ..errors import InputError
    if args.git_external:
        from ..review.git import external_diff
        write_stdout(external_diff(args.files, args.unified))
        return 0
    if len(args.files) != 2:
        raise InputError(f"miltext diff: two files to compare, not {len(args.files)}")
    a, b = args.files
    if args.weights:
        return _form_changes(a, b)
    if args.text or _weight_files(a, b):
        return _text_diff(a, b, args)
    from ..review import Side, compare
    with Progress("diff") as progress:
        progress.advance(0, "reading")
        weights = not args.no_weight_digests
        old, new = Side.read(a, read_weights=weights), Side.read(b, read_weights=weights)
    try:
        change = compare(old, new)
        if args.graph:
            from ..review.graph import change_dot
            from .graph_cmd import write_graph
            write_graph(change_dot(change), args.output, args.max_ops, args.timeout)
        elif change.differs:
            write_stdout(change.text(args.unified))
    finally:
        old.close()
        new.close()
    return 1 if change.differs else 0


def _form_changes(a: str, b: str) -> int:
    from ..model import read_model
    from ..review.compression import report
    with Progress("diff") as progress:
        progress.advance(0, "reading")
        text = report(read_model(a), read_model(b))
    write_stdout(text)
    return 1 if text else 0


def _weight_files(a: str, b: str) -> bool:
    from ..model.weights import is_weight_file
    return is_weight_file(a) or is_weight_file(b)


def _text_diff(a_path: str, b_path: str, args) -> int:
    from ..model.file_text import file_text
    digests = False if args.no_weight_digests else None
    with Progress("diff") as progress:
        a = file_text(a_path, digests, progress)
        b = file_text(b_path, digests, progress)
    if a == b:
        return 0
    write_stdout("".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), a_path, b_path,
                                              n=args.unified)))
    return 1
