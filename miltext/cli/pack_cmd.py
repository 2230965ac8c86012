"""Build an unpacked model back: DIR/model.mil and DIR/weights/ into a .mlpackage.

The inverse of `miltext unpack`. Without a model section in model.mil, the model gets a
description derived from the main function, as `miltext build` does. The package is written
into a temporary folder and renamed into place, so a failure leaves nothing half-written.
"""
from ..progress import Progress


def add_arguments(p) -> None:
    p.add_argument("dir", help="a folder holding model.mil and weights/ (or a .mil file)")
    p.add_argument("-o", "--output", required=True, help="the .mlpackage to write")


def run(args) -> int:
    from ..model.folder import pack
    with Progress("pack") as progress:
        pack(args.dir, args.output, progress)
    return 0
