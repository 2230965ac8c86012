"""Build MIL text into a serialized MIL Program (deterministic bytes).

Names that nothing defines, values left out as [...] and programs nested deeper than protobuf
reads are errors; the output is written all at once or not at all.
"""
from ..errors import ProgramError
from ..files import write_atomic
from ..sources import InputError, read_program


def add_arguments(p) -> None:
    p.add_argument("file", help="the .mil text to build")
    p.add_argument("-o", "--output", required=True, help="the .pb file to write")


def run(args) -> int:
    program = read_program(args.file)
    try:
        data = program.to_proto(strict=True).SerializeToString(deterministic=True)
    except ProgramError as e:
        raise InputError(located(args.file, e)) from None
    write_atomic(args.output, data)
    return 0


def located(path: str, e: ProgramError) -> str:
    if e.loc:
        return f"{path}:{e.loc[0]}:{e.loc[1]}: error: {e.message}"
    return f"{path}: error: {e.message}"
