"""Write a model as text: DIR/model.mil (its model section and program) and DIR/weights/ (its
weight files as they are). `miltext pack DIR -o MODEL.mlpackage` builds it back.

MODEL is a .mlpackage (or a .mlmodel with its weights/ beside it). DIR must be new, empty, or an
earlier unpack; it is written all at once, after every blob has been checked.
"""
from ..progress import Progress


def add_arguments(p) -> None:
    p.add_argument("model", help="the .mlpackage to unpack")
    p.add_argument("dir", help="the folder to write model.mil and weights/ into")


def run(args) -> int:
    from ..model.folder import unpack
    with Progress("unpack") as progress:
        unpack(args.model, args.dir, progress)
    return 0
