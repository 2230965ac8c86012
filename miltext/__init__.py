"""miltext: MIL (Core ML's Model Intermediate Language) as readable, diffable source text."""
from typing import TYPE_CHECKING

from .errors import ParseError, ProgramError

if TYPE_CHECKING:   # for the annotations only: the object model loads when first used
    from .ir import Program

__version__ = "0.1.0"

# The object model (miltext.ir) is the public API; miltext.ir loads each of its modules when one
# of its names is first used (PEP 562), so a command that never builds a program, such as
# `miltext textconv` which git runs once per file, skips them.
from . import ir as _ir


def __getattr__(name: str):
    """A name of the object model, or a submodule (`miltext.dtypes`), imported when first used."""
    if name.startswith("__"):   # what tools probe for (__wrapped__, __path__ ...): never a submodule
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    if name in _ir.__all__:
        value = globals()[name] = getattr(_ir, name)
        return value
    if name == "Session":       # the interpreter's, imported when first used (numpy)
        from .interpreter.session import Session
        return Session
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as e:
        if e.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_ir.__all__) | {"Session"})


def loads(text: str, filename: str | None = None) -> "Program":
    """Parse MIL text (miltext's canonical form, coremltools' print, or the model.mil text of
    Apple's compiler, each known by its look) into a Program."""
    from .text.dialects import parse
    return parse(text, filename)


def load(path) -> "Program":
    """Parse a .mil file."""
    from .files import decode_text, read_regular
    return loads(decode_text(read_regular(path)), str(path))


def dumps(program: "Program", dialect: str = "mil") -> str:
    """The canonical MIL text of a program; with dialect="modelmil", the model.mil text Apple's
    compiler writes (ProgramError for what that dialect cannot express)."""
    from .text.dialects import print_text
    try:
        return print_text(program, dialect)
    except RecursionError:
        raise ProgramError("the program is nested too deeply to print") from None


def proto_to_text(data) -> str:
    """The canonical text of a serialized MIL Program (bytes, or a MIL Program message): what
    dumps(Program.from_proto(data)) gives, straight from the bytes, without building the object
    model, when the optional native printer is built (see miltext.text.mil.fastprint)."""
    from .text.mil.fastprint import proto_text
    if not isinstance(data, (bytes, bytearray, memoryview)):
        data = data.SerializeToString()
    try:
        return proto_text(data)
    except RecursionError:
        raise ProgramError("the program is nested too deeply to print") from None


def dump(program: "Program", path, dialect: str = "mil") -> None:
    """Write the text of a program (see dumps) to `path` (atomically: all or nothing)."""
    from .files import write_atomic
    write_atomic(path, dumps(program, dialect).encode("utf-8"))


def check(program: "Program", *, filename: str | None = None, source: str | None = None,
          weights: str | None = None, section=None, confine_refs: bool = False, ref_headers=None) -> list:
    """What is wrong in a program that parses, as a list of `Diagnostic`s in source order (see
    docs/check.md). `filename` names the file in them; `source`, the text the program was parsed
    from, puts each caret under the very input at fault; `weights` (a weights folder, an
    .mlpackage or a weight.bin) lets blob offsets be checked; `section`, the text's model section
    (`parse(text, with_model=True)[0]`), is checked against the program. `confine_refs` refuses
    weight references that lead out of the folder of `filename`; `ref_headers`, a
    miltext.model.weight_headers.Headers kept between checks, parses each weight file once."""
    from .checker import check as check_program
    return check_program(program, filename=filename, source=source, weights=weights, section=section,
                         confine_refs=confine_refs, ref_headers=ref_headers)


def run(program: "Program", inputs: dict, function: str = "main", states: dict | None = None,
        weights: str | None = None, threads: int | None = None) -> dict:
    """The outputs of `function` for `inputs` (name -> numpy array), computed by miltext's NumPy
    interpreter (docs/run.md); `states` are a stateful model's, updated in place; `weights` is
    the folder blob references are relative to; `threads`, at most how many threads it uses
    (None: as NumPy's BLAS was given). To run one program many times, keep a
    `miltext.Session(program, weights)` and call its run: it is prepared once."""
    from .interpreter import run as run_program
    return run_program(program, inputs, function, states, weights, threads=threads)


def from_coremltools(obj, folder=None) -> "Program":
    """A Program from a coremltools (pymil) Program or an ML program MLModel; see interop."""
    from .interop import from_coremltools as convert
    return convert(obj, folder)


def to_coremltools(program: "Program", folder=None):
    """A coremltools (pymil) Program from a Program; see interop."""
    from .interop import to_coremltools as convert
    return convert(program, folder)


__all__ = ["loads", "load", "dumps", "dump", "proto_to_text", "check", "run", "Session", "from_coremltools", "to_coremltools",
           "ParseError", "ProgramError", *_ir.__all__]
