""""Did you mean": the known name closest to a misspelt one, when one is close enough."""
from __future__ import annotations

import difflib


def closest(name: str, known, *, cutoff: float = 0.6) -> str | None:
    """The known name nearest `name` (case aside), or None when none is near."""
    by_lower = {}
    for k in sorted(set(known)):    # sorted: the same names give the same answer in any order
        if k != name:
            by_lower.setdefault(k.lower(), k)
    if name.lower() in by_lower:
        return by_lower[name.lower()]
    found = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=cutoff)
    return by_lower[found[0]] if found else None


def did_you_mean(name: str, known, spell=repr, **kwargs) -> str:
    """`; did you mean 'relu'?`, or nothing."""
    found = closest(name, known, **kwargs)
    return f"; did you mean {spell(found)}?" if found is not None else ""
