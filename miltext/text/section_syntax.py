"""The model section of MIL text as the parser reads it: calls, features and sections, before
anything gives them a meaning (`miltext.model.section` turns them into a model description)."""
from __future__ import annotations

from types import SimpleNamespace  # not dataclasses: git's textconv prints sections, and

                                   # dataclasses (with inspect) is a tenth of its start-up


class Call(SimpleNamespace):
    """`name(key=value, ...)`: a section's head, or a feature type written with its fields:
    `args` key -> Value in the order written, `arg_locs` key -> where its key was."""

    def __init__(self, name: str, args: dict | None = None, loc: tuple | None = None,
                 arg_locs: dict | None = None):
        super().__init__(name=name, args={} if args is None else args, loc=loc,
                         arg_locs={} if arg_locs is None else arg_locs)


class Feature(SimpleNamespace):
    """`input %x: TYPE`: a feature of `kind` (input, output, state, trainingInput); its type a
    ValueType, or a Call."""

    def __init__(self, kind: str, name: str, type: object, loc: tuple | None = None):
        super().__init__(kind=kind, name=name, type=type, loc=loc)


class Section(SimpleNamespace):
    """`name(...)` or `name(...) { items }`; `body` is None when there are no braces."""

    def __init__(self, call: Call, body: list | None = None):
        super().__init__(call=call, body=body)
