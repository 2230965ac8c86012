"""Show a file as MIL text for git (`git diff`, `git log -p`): a .mlmodel, a MIL Program .pb, a
weight.bin (its blobs and their digests, each named by its const when the model that goes with
it is found: beside it, or through git for a temporary copy; model/weight_names) or any file
miltext print reads.

git runs it once per file version, often on a temporary copy with nothing beside it, so it
shows no digests beside blob references (the weight file's own text shows them), and it never
fails: a file it cannot read becomes one line saying so, with the file's size and digest.
"""
from ..model.file_text import textconv_text
from . import write_stdout


def add_arguments(p) -> None:
    p.add_argument("file")


def run(args) -> int:
    write_stdout(textconv_text(args.file))
    return 0
