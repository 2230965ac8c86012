"""The model section of MIL text as the parser reads it: calls, features and sections, before
anything gives them a meaning (`miltext.model.section` turns them into a model description)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Call:
    """`name(key=value, ...)`: a section's head, or a feature type written with its fields."""
    name: str
    args: dict = field(default_factory=dict)   # key -> Value, in the order written
    loc: tuple | None = None
    arg_locs: dict = field(default_factory=dict, repr=False)


@dataclass
class Feature:
    """`input %x: TYPE`: a feature of `kind` (input, output, state, trainingInput)."""
    kind: str
    name: str
    type: object                               # a ValueType, or a Call
    loc: tuple | None = None


@dataclass
class Section:
    """`name(...)` or `name(...) { items }`; `body` is None when there are no braces."""
    call: Call
    body: list | None = None
