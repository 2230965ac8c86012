"""The Lark grammar files (grammar/*.lark) and where Lark keeps the tables it builds from them."""
from __future__ import annotations

import hashlib
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
# Inside the installed package, or beside it in a source checkout.
_GRAMMAR_DIRS = (os.path.join(os.path.dirname(_HERE), "grammar"),
                 os.path.join(os.path.dirname(os.path.dirname(_HERE)), "grammar"))


def grammar_text(name: str = "mil.lark") -> str:
    for folder in _GRAMMAR_DIRS:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return f.read()
    raise FileNotFoundError(f"grammar file {name} not found in {_GRAMMAR_DIRS}")


def cache_path(flavour: str, grammar: str):
    """Where Lark keeps the tables it builds from `grammar` (the text of a flavour), so a
    start-up does not rebuild them; named after the grammar's text, which a change renames."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    try:
        os.makedirs(os.path.join(base, "miltext"), exist_ok=True)
    except OSError:
        return False
    import lark
    digest = hashlib.sha256(grammar.encode("utf-8")).hexdigest()[:16]
    return os.path.join(base, "miltext", f"grammar-{flavour}-{digest}-lark{lark.__version__}.cache")
