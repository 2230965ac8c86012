"""Draw a program as a graph: an op per node, a var per edge, consts folded into the ops that use
them. Written as Graphviz DOT (on stdout, or to -o FILE.dot), or as SVG (-o FILE.svg, drawn by
Graphviz's `dot` program, which must be installed). `miltext diff --graph A B -o change.svg`
draws a change.
"""
from . import write_stdout


def add_arguments(p) -> None:
    p.add_argument("file", help=".mlpackage, .mlmodel, .pb, .mil")
    p.add_argument("-o", "--output", metavar="FILE", help="FILE.svg or FILE.dot (default: DOT on stdout)")


def run(args) -> int:
    from ..review import Side
    from ..review.graph import program_dot
    side = Side.read(args.file, read_weights=False)
    write_graph(program_dot(side), args.output)
    return 0


def write_graph(dot_text: str, output: str | None) -> None:
    """DOT text to stdout, or to `output` as DOT or (by its suffix) SVG."""
    from ..errors import InputError
    from ..files import write_atomic
    if output is None:
        write_stdout(dot_text)
        return
    if output.lower().endswith(".svg"):
        from ..review.graph import svg
        try:
            data = svg(dot_text)
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
