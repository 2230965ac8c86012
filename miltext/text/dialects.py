"""The MIL text dialects miltext writes: its own canonical text (`mil`) and the model.mil text
of Apple's compiler (`modelmil`). Reading needs no choice: the parser knows each by its look."""
from __future__ import annotations

DIALECTS = ("mil", "modelmil")


def printer(dialect: str):
    """The function that prints a Program in `dialect`."""
    if dialect == "mil":
        from .mil.printer import print_program
        return print_program
    if dialect == "modelmil":
        from .modelmil.printer import print_modelmil
        return print_modelmil
    raise ValueError(f"unknown dialect {dialect!r}: the dialects are {', '.join(DIALECTS)}")
