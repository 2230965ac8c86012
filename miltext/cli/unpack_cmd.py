"""Write a model as text: DIR/model.mil (its model section and program) and DIR/weights/ (its
weight files as they are). `miltext pack DIR -o MODEL.mlpackage` builds it back.

MODEL is a .mlpackage (or a .mlmodel with its weights/ beside it). DIR must be new or empty;
with --force, it may be an earlier unpack, which is replaced: a folder holding anything but
model.mil and weights/weight.bin is never replaced (docs/safety.md). It is written all at once,
after every blob has been checked.
"""
import os

from ..progress import Progress


def add_arguments(p) -> None:
    p.add_argument("model", help="the .mlpackage to unpack")
    p.add_argument("dir", help="the folder to write model.mil and weights/ into")
    p.add_argument("--force", action="store_true",
                   help="replace DIR when it holds an earlier unpack (model.mil and weights/weight.bin, "
                        "nothing else), or write where a link DIR leads")


def run(args) -> int:
    from ..errors import InputError
    from ..files import claim_output
    from ..model.folder import OWNED, unpack
    folder = claim_output(args.dir, OWNED, args.force, [args.model])
    if not args.force and os.path.isdir(folder) and os.listdir(folder):
        raise InputError(f"{args.dir}: error: not empty; unpack into a new or empty folder "
                         "(--force replaces an earlier unpack)")
    with Progress("unpack") as progress:
        unpack(args.model, folder, progress)
    return 0
