"""Serialized MIL Program → canonical text through the optional C extension `_fastprint`.

`proto_text(data)` is `printer.print_program(Program.from_proto(data))`, byte for byte, only
faster: the extension reads the protobuf wire format and writes the text without building the
object model, and gives up (None) on anything it does not handle exactly as the printer does,
in which case the Python path runs. The extension is built with the package when a C compiler
is there; without it, or with MILTEXT_PURE_PYTHON=1 in the environment, everything takes the
Python path.
"""
from __future__ import annotations

from ...native import pure_python

try:
    from . import _fastprint
except ImportError:  # not built: no C compiler, or a source tree that was never installed
    _fastprint = None

_configured = False
_orders: dict | None = None


def available() -> bool:
    """Whether program_text() can use the extension (built, and not disabled)."""
    return _fastprint is not None and not pure_python()


def _configure() -> None:
    """Hand the extension the tables that live in Python, once."""
    global _configured
    from ... import dtypes, packing
    from .. import lexemes
    from . import printer
    table = [(d.code, d.name, d.bits, d.kind, d.storage) for d in dtypes.BY_CODE.values()]
    _fastprint.configure(
        table, sorted(lexemes.KEYWORDS), printer.INLINE_LIMIT, printer.DEFAULT_WEIGHT_FILE,
        dict(packing.CANONICAL_NAN_BITS),
        {name: packing.fp8_table_bytes(name) for name in ("fp8e4m3fn", "fp8e5m2")},
        dict(dtypes.DEFAULT_FOR_KIND), lexemes.quote, printer.INDENT)
    _configured = True


def input_orders() -> dict:
    """op type → {input name: rank}, for every op the table knows (ops.input_order)."""
    global _orders
    if _orders is None:
        from ... import ops
        _orders = {name: dict(ops.input_order(name)) for name in ops.table()["ops"]}
    return _orders


def program_text(data: bytes) -> str | None:
    """The canonical text of a serialized MIL Program, or None when the C path is unavailable,
    disabled, or leaves this input to the Python printer (anything unusual, including input
    that is not a valid Program)."""
    if not available():
        return None
    if not _configured:
        _configure()
    return _fastprint.program_text(data, input_orders())


def proto_text(data) -> str:
    """`print_program(Program.from_proto(data))`: through C when it can, else in Python (which
    also gives the proper error for input that is not a Program)."""
    if isinstance(data, (bytes, bytearray, memoryview)):
        text = program_text(data)
        if text is not None:
            return text
    from ...ir import Program
    from .printer import print_program
    return print_program(Program.from_proto(data))
