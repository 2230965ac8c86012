"""Object model → serialized MIL Program through the optional C extension `_fastencode`.

`program_bytes(program)` is `encode.program_to_proto(program).SerializeToString(deterministic=True)`,
byte for byte, only faster: the extension walks the object model and writes the wire format
without building protobuf messages, and gives up (None) on anything it does not handle exactly
as encode.py does, in which case the Python path runs (and gives the bytes or the proper error).
The extension is built with the package when a C compiler is there; without it, or with
MILTEXT_PURE_PYTHON=1 in the environment (miltext.native), everything
takes the Python path.
"""
from __future__ import annotations

from ..native import pure_python

try:
    from ..proto import _fastencode
except ImportError:  # not built: no C compiler, or a source tree that was never installed
    _fastencode = None

_configured = False


def available() -> bool:
    """Whether program_bytes() can use the extension (built, and not disabled)."""
    return _fastencode is not None and not pure_python()


def _configure() -> None:
    """Hand the extension the classes, sentinels and dtype table that live in Python, once."""
    global _configured
    import numpy as np

    from .. import dtypes
    from .program import Block, Function, Operation, Program, Var
    from .types import MISSING, UNSET_DIM, VARIADIC, DictType, ListType, StateType, TensorType, TupleType, UnknownType
    from .values import Blob, DictData, EmptyImmediate, ListData, TensorData, TupleData, Value
    classes = {cls.__name__: cls for cls in (
        Program, Function, Block, Operation, Var, TensorType, ListType, TupleType, DictType, StateType,
        UnknownType, Value, TensorData, TupleData, ListData, DictData, Blob, EmptyImmediate)}
    classes["ndarray"] = np.ndarray
    # exactly what dtypes.by_name answers for every name it knows (aliases included); the
    # extension reads "dtypeN" itself
    codes = {name: dtypes.by_name(name).code for name in (*dtypes.BY_NAME, *dtypes.ALIASES)}
    _fastencode.configure(classes, (MISSING, UNSET_DIM, VARIADIC), codes)
    _configured = True
    _check_against_protobuf()


_agrees_with_protobuf = True


def _check_against_protobuf() -> None:
    """Once per process: the extension writes what the installed protobuf writes for a program
    whose maps hold keys that are prefixes of one another (upb puts "ab" before "a", a rule a
    protobuf release could change). Should they differ, the Python path does all the work."""
    global _agrees_with_protobuf
    from .encode import _python_proto
    from .program import Block, Function, Operation, Program, Var
    from .values import Value
    op = Operation("f", inputs={"x": ["a"], "xy": ["a"], "": ["a"]}, outputs=[Var("b")],
                   attributes={"n": Value.tensor("b"), "na": Value.tensor(1)})
    block = Block(outputs=["b"], operations=[op])
    probe = Program(functions={name: Function(opset="o", blocks={"o": block, "oa": block, "": block})
                               for name in ("m", "ma", "")})
    _agrees_with_protobuf = (_fastencode.program_bytes(probe)
                             == _python_proto(probe, False).SerializeToString(deterministic=True))


def program_bytes(program) -> bytes | None:
    """The deterministic serialized bytes of `program`, or None when the C path is unavailable,
    disabled, or leaves this program to encode.py (anything unusual, including what encode.py
    refuses)."""
    if not available() or getattr(program, "unknown_fields", None):  # fields it does not know: Python
        return None
    if not _configured:
        _configure()
    return _fastencode.program_bytes(program) if _agrees_with_protobuf else None
