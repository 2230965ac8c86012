"""miltext: MIL (Core ML's Model Intermediate Language) as readable, diffable source text."""
from .errors import ParseError, ProgramError
from .ir import *  # noqa: F401,F403 - the object model is the public API
from .ir import __all__ as _ir_all

__version__ = "0.1.0"


def loads(text: str, filename: str | None = None) -> "Program":
    """Parse MIL text (miltext's canonical form or coremltools' print) into a Program."""
    from .text.parser import parse
    return parse(text, filename)


def load(path) -> "Program":
    """Parse a .mil file."""
    with open(path, encoding="utf-8") as f:
        return loads(f.read(), str(path))


def dumps(program: "Program") -> str:
    """The canonical MIL text of a program."""
    from .text.printer import print_program
    try:
        return print_program(program)
    except RecursionError:
        raise ProgramError("the program is nested too deeply to print") from None


def dump(program: "Program", path) -> None:
    """Write the canonical text of a program to `path` (atomically: all or nothing)."""
    from .files import write_atomic
    write_atomic(path, dumps(program).encode("utf-8"))


__all__ = ["loads", "load", "dumps", "dump", "ParseError", "ProgramError", *_ir_all]
