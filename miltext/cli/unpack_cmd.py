"""Write a model as text: DIR/model.mil (its model section and program) and DIR/weights/ (its
weight files as they are). `miltext pack DIR -o MODEL.mlpackage` builds it back.

MODEL is a .mlpackage (or a .mlmodel with its weights/ beside it). DIR must be new or empty;
with --force, it may be an earlier unpack, which is replaced (a folder holding other files is
never replaced). It is written all at once, after every blob has been checked.
"""
import os

from ..progress import Progress


def add_arguments(p) -> None:
    p.add_argument("model", help="the .mlpackage to unpack")
    p.add_argument("dir", help="the folder to write model.mil and weights/ into")
    p.add_argument("--force", action="store_true",
                   help="replace DIR when it holds an earlier unpack (model.mil and weights/)")


def run(args) -> int:
    from ..errors import InputError
    from ..model.folder import unpack
    if not args.force and os.path.isdir(args.dir) and os.listdir(args.dir):
        raise InputError(f"{args.dir}: error: not empty; unpack into a new or empty folder "
                         "(--force replaces an earlier unpack)")
    with Progress("unpack") as progress:
        unpack(args.model, args.dir, progress)
    return 0
