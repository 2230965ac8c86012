"""Show what is in a model: ops by type, weights by layer with their dtypes and compression
schemes (read from each constexpr_* op: n-bit palettes, blockwise shift-scale, sparse, int8
affine) and bits per parameter, the large weights left uncompressed, and what the model
takes on disk.

FILE is anything `miltext print` reads (.mlpackage, .mlmodel, .pb, .mil, .mlmodelc). Only the
program and the sizes of files are read: no weight file is opened unless --values asks for
every weight's numbers (min, max, standard deviation, zeros, non-finite elements).
"""
from ..progress import Progress
from . import write_stdout

SHOWN = 50   # weights the table lists without --all


def add_arguments(p) -> None:
    p.add_argument("file", help=".mlpackage, .mlmodel, .pb, .mil or .mlmodelc (- reads text from stdin)")
    p.add_argument("--values", action="store_true",
                   help="read the weights too: min, max, std, zeros and non-finite counts of each "
                        "(compressed ones decompressed)")
    p.add_argument("--json", action="store_true", help="write it all as JSON")
    p.add_argument("--all", action="store_true", help=f"list every weight (the table lists the first {SHOWN})")
    p.add_argument("--plot", metavar="FILE.svg", help="also write a bar chart of bytes per layer as SVG")


def run(args) -> int:
    import json

    from ..errors import InputError
    from ..files import claim_output, write_atomic
    from ..model import read_model
    from ..stats import model_stats
    from ..stats.render import text
    from .build_cmd import make_explicit
    plot = None
    if args.plot is not None:
        if not args.plot.lower().endswith(".svg"):
            raise InputError(f"{args.plot}: error: --plot writes SVG: name a .svg file")
        plot = claim_output(args.plot, inputs=[args.file])
    with Progress("stats", stages={"reading": 1}) as progress:
        model = read_model(args.file, progress)
        make_explicit(model, args.file)       # text may leave output types out
        stats = model_stats(model, values=args.values)
    if plot is not None:
        from ..stats.chart import bars_svg
        write_atomic(plot, bars_svg(stats).encode("utf-8"))
    if args.json:
        write_stdout(json.dumps(stats.as_dict(), indent=2) + "\n")
    else:
        write_stdout(text(stats, None if args.all else SHOWN))
    return 0
