"""Show a program as canonical MIL text on stdout.

FILE is MIL text (.mil) or a serialized MIL Program (.pb).
"""
from ..sources import read_program
from ..text.printer import print_program
from . import write_stdout


def add_arguments(p) -> None:
    p.add_argument("file", help=".mil text or a serialized MIL Program (.pb)")


def run(args) -> int:
    write_stdout(print_program(read_program(args.file)))
    return 0
