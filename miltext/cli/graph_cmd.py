"""Draw a program as a graph: an op per node, a var per edge, consts folded into the ops that use
them. Written as Graphviz DOT (on stdout, or to -o FILE.dot), or as SVG (-o FILE.svg, drawn by
Graphviz's `dot` program, which must be installed). `miltext diff --graph A B -o change.svg`
draws a change.

`dot` takes minutes over a few thousand nodes, so SVG is drawn for at most --max-ops nodes
(1000) and `dot` is stopped after --timeout seconds (60); a larger graph is written as DOT,
for a viewer of its own or a `dot` run by hand.
"""
from . import write_stdout

MAX_SVG_NODES = 1000   # past it `dot` takes minutes (4000 ops: about two): SVG is refused
DOT_TIMEOUT = 60       # seconds `dot` may draw before it is stopped


def add_arguments(p) -> None:
    p.add_argument("file", help=".mlpackage, .mlmodel, .pb, .mil")
    p.add_argument("-o", "--output", metavar="FILE", help="FILE.svg or FILE.dot (default: DOT on stdout)")
    add_drawing_arguments(p)


def add_drawing_arguments(p) -> None:
    """The bounds of an SVG drawing (graph, diff --graph)."""
    p.add_argument("--max-ops", type=_positive(int), default=MAX_SVG_NODES, metavar="N",
                   help=f"draw SVG only for a graph of at most N nodes ({MAX_SVG_NODES}); past it, "
                        "write .dot")
    p.add_argument("--timeout", type=_positive(float), default=DOT_TIMEOUT, metavar="SECONDS",
                   help=f"stop Graphviz's dot after SECONDS ({DOT_TIMEOUT}) when drawing SVG")


def _positive(kind):
    def read(text: str):
        import argparse
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value > 0 or value == float("inf"):
            raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
        return value
    return read


def run(args) -> int:
    from ..review import Side
    from ..review.graph import program_dot
    side = Side.read(args.file, read_weights=False)
    write_graph(program_dot(side), args.output, args.max_ops, args.timeout)
    return 0


def write_graph(dot_text: str, output: str | None, max_ops: int, timeout: float) -> None:
    """DOT text to stdout, or to `output` as DOT or (by its suffix) SVG, drawn only for at most
    `max_ops` nodes and within `timeout` seconds."""
    from ..errors import InputError
    from ..files import claim_output, write_atomic
    if output is None:
        write_stdout(dot_text)
        return
    output = claim_output(output)   # a file only: never a folder, a link or anything else in the way
    if output.lower().endswith(".svg"):
        from ..review.graph import node_count, svg
        nodes = node_count(dot_text)
        if nodes > max_ops:
            raise InputError(f"{output}: the graph has {nodes} nodes, more than --max-ops {max_ops}: "
                             "Graphviz would take minutes to draw it (write a .dot file instead, or "
                             "raise --max-ops)")
        try:
            data = svg(dot_text, timeout)
        except RuntimeError as e:
            raise InputError(f"{output}: {e}") from None
        if data is None:
            raise InputError(f"{output}: SVG needs Graphviz's `dot` program, which is not installed "
                             "(install graphviz, or write a .dot file)")
        write_atomic(output, data)
    elif output.lower().endswith((".dot", ".gv")):
        write_atomic(output, dot_text.encode("utf-8"))
    else:
        raise InputError(f"{output}: the graph is written as .svg or .dot")
