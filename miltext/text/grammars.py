"""The Lark grammar files (grammar/*.lark) with their tokens filled in from the lexicon, and
where Lark keeps the tables it builds from them."""
from __future__ import annotations

import hashlib
import os
import re

from . import lexicon

_HERE = os.path.dirname(os.path.abspath(__file__))
# Inside the installed package, or beside it in a source checkout.
_GRAMMAR_DIRS = (os.path.join(os.path.dirname(_HERE), "grammar"),
                 os.path.join(os.path.dirname(os.path.dirname(_HERE)), "grammar"))


# A grammar file names a spelling of text/lexicon.py as {{NAME}}, inside a /regex/.
_PLACEHOLDER = re.compile(r"\{\{([A-Z0-9_]+)\}\}")
_SLASH = re.compile(r"(?<!\\)/")   # a `/` ends a Lark regex: inside one it is written \/

# coremltools' print writes strings and names raw (lexicon.RAW_STRING, RAW_VAR): its flavour of
# grammar/mil.lark reads them so.
RAW_OVERRIDES = r"""
%override STRING: /{{RAW_STRING}}/
%override VAR: /{{RAW_VAR}}/
%override ARG_REF: /{{NAME}}[ \t]*=[ \t]*{{RAW_VAR}}/
"""


def grammar_text(name: str = "mil.lark", raw: bool = False) -> str:
    """The text of grammar file `name`, its placeholders filled in; with `raw`, the flavour of
    mil.lark that reads coremltools' print."""
    for folder in _GRAMMAR_DIRS:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                return fill_in(f.read() + (RAW_OVERRIDES if raw else ""))
    raise FileNotFoundError(f"grammar file {name} not found in {_GRAMMAR_DIRS}")


def fill_in(grammar: str) -> str:
    """`grammar` with each {{NAME}} replaced by lexicon.NAME, written for a Lark /regex/."""
    return _PLACEHOLDER.sub(lambda m: _SLASH.sub(r"\\/", getattr(lexicon, m.group(1))), grammar)


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
