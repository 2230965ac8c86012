"""How a text is read and written: the options the one door for MIL text (text.dialects) passes
to the parsers and printers, explicit, never ambient. A module of its own so that the parsers,
which the dialects load, need not import the dialects back."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class ReadOptions:
    """How a text is read. `op_factory`, when given, takes each op as the parser builds it and
    returns what the program holds instead (the language server keeps its ops compact:
    miltext.ir.compact.compact). Without `resolve_blob_offsets`, a `blob` written without its
    offset stays a blob_layout.ImpliedBlob, left for blob_layout.fill_in(..., keep_marks=True)
    to work out over the whole text (a text read in pieces, as an editor holds it)."""
    op_factory: Callable | None = None
    resolve_blob_offsets: bool = True


@dataclass(frozen=True)
class PrintOptions:
    """How a program is written. `notes` (mil; a miltext.authored.trivia.Trivia) makes it an
    author's text: their comments and blank lines placed, their literals laid out as they were.
    `version` (modelmil) is the dialect's version, 1.0 or 1.3 (by default the one the program
    was read with, else the one the compiler writes for it)."""
    notes: object = None
    version: str | None = None


READ = ReadOptions()
PRINT = PrintOptions()
