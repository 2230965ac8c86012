"""Build an unpacked model back: DIR/model.mil and DIR/weights/ into a .mlpackage.

The inverse of `miltext unpack`. model.mil is verified first, as `miltext build` verifies a
text (--no-verify builds it anyway). Without a model section in model.mil, the model gets a
description derived from the main function, as `miltext build` does. The package is written
into a temporary folder and renamed into place, so a failure leaves nothing half-written.
"""
from .build_cmd import add_output
from .check_cmd import add_confine_refs


def add_arguments(p) -> None:
    p.add_argument("dir", help="a folder holding model.mil and weights/ (or a .mil file)")
    add_output(p, "the .mlpackage to write")
    add_confine_refs(p)


def run(args) -> int:
    from ..files import claim_output
    from ..model.folder import mil_source
    from ..model.io import kind_of, output_owned
    from .build_cmd import build
    source = mil_source(args.dir)
    output = claim_output(args.output, output_owned(kind_of(args.output)), args.force, [args.dir, source])
    return build(source, output, None, args.verify, "pack", args.confine_refs)
