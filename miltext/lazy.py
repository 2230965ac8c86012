"""numpy, imported on first use. Importing it costs a tenth of a second, which a command that
never touches an array (git runs `miltext textconv` once per file version) should not pay.

`from .lazy import numpy as np` gives a stand-in that imports numpy when a name is first looked
up on it, then holds numpy's own names (its __dict__ becomes numpy's), so later look-ups cost
what a module's do. `LazyTable` is a dict of numpy things made on first use of each key.
"""
from __future__ import annotations

import importlib


class LazyModule:
    def __init__(self, name: str):
        object.__setattr__(self, "_lazy_name", name)

    def __getattr__(self, attr: str):
        module = importlib.import_module(object.__getattribute__(self, "_lazy_name"))
        object.__setattr__(self, "__dict__", module.__dict__)
        return getattr(module, attr)


numpy = LazyModule("numpy")


class LazyTable(dict):
    """`make(key)` for each key of `keys`, made when first asked for (`table[key]`, `.get`);
    `key in table` answers for every key, made or not."""

    def __init__(self, keys, make):
        super().__init__()
        self._keys, self._make = frozenset(keys), make

    def __missing__(self, key):
        if key not in self._keys:
            raise KeyError(key)
        value = self[key] = self._make(key)
        return value

    def __contains__(self, key) -> bool:
        return key in self._keys

    def get(self, key, default=None):
        return self[key] if key in self._keys else default
