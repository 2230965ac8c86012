"""--rename-input, --rename-output, --rename-var: a var renamed wherever the function names it
(nested blocks included) and in the model section (features, classifier names)."""
from __future__ import annotations

from ..text.lexemes import var as spelt
from . import features, scope
from .scope import EditError, definitions


def rename(kind: str, fn_name: str, fn, old: str, new: str, descs: list) -> None:
    defs = definitions(fn)
    if kind == "rename-input" and old not in {v.name for v in fn.inputs}:
        raise EditError(f"{spelt(old)} is no input of function {fn_name} (its inputs: "
                        f"{_listed(v.name for v in fn.inputs)}); --rename-var renames any var")
    if kind == "rename-output" and old not in fn.block.outputs:
        raise EditError(f"{spelt(old)} is no output of function {fn_name} (its outputs: "
                        f"{_listed(fn.block.outputs)}); --rename-var renames any var")
    if new in defs:
        raise EditError(f"function {fn_name} already has a var {spelt(new)}: choose a name it does not use")
    scope.rename(fn, old, new)
    features.rename(descs, old, new)


def _listed(names) -> str:
    return ", ".join(spelt(n) for n in names) or "none"
