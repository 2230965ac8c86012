"""Every intermediate value of a run, by key, handed to a callback or written as it comes.

A key is the var's name; inside a nested block (a `cond` branch, a `while_loop`'s condition or
body) `#PASS` follows for each enclosing block, outermost first: `%y` of a loop body's third pass
is `y#2`, of a loop inside it `y#2#0`. A run is of one function, whose var names are its own, so
no function name is needed. `const` ops are left out unless asked for (their values are in the
model already); every other op's outputs are kept, `constexpr_*` ones too.

    from miltext.numerics import trace
    trace(session, {"x": x}, lambda key, value, op: print(key, value.shape))
"""
from __future__ import annotations

import json
import os
import zipfile
from urllib.parse import quote

import numpy as np

from ..ir.walk import operations

INDEX = "index.json"     # a trace folder's list of keys and files


def key_of(name: str, path: tuple) -> str:
    """The key of var `name` at `path` (the Session observer's: (owner, block, pass) per level)."""
    return name + "".join(f"#{level[2]}" for level in path) if path else name


class Selection:
    """Which values to keep: of the op types in `ops`, or the vars named in `names` (either
    list selects; neither: every op's but consts')."""

    def __init__(self, ops=None, names=None):
        self.ops = frozenset(ops) if ops else None
        self.names = frozenset(n.lstrip("%") for n in names) if names else None

    def wants(self, op, name: str) -> bool:
        if self.ops is None and self.names is None:
            return op.type != "const"
        return (self.ops is not None and op.type in self.ops) or (self.names is not None and name in self.names)


def is_array(value) -> bool:
    return isinstance(value, np.ndarray) and not value.dtype.hasobject


def observer(on_value, selection: Selection | None = None):
    """A Session observer that calls `on_value(key, array, op)` for each selected array an op
    gives (lists and other values an .npy cannot hold are passed over)."""
    selection = selection or Selection()

    def observe(function, path, op, values):
        for name, value in values.items():
            if is_array(value) and selection.wants(op, name):
                on_value(key_of(name, path), value, op)
    return observe


def with_consts(session, function: str, observe):
    """`observe` (a Session observer) told of every const the run reads, each just before the
    first op that reads it: the interpreter binds most consts straight to their readers, unseen."""
    fn = session.program.functions.get(function)
    consts = {} if fn is None else \
        {op.outputs[0].name: op for op in operations(fn) if op.type == "const" and len(op.outputs) == 1}
    seen = set()

    def observed(function, path, op, values):
        if op.type == "const":
            if values.keys() <= seen:
                return
            seen.update(values)
        else:
            for name in reads(op):
                const = consts.get(name)
                if const is not None and name not in seen:
                    seen.add(name)
                    observe(function, path, const, {name: session.const_value(const)})
        observe(function, path, op, values)
    return observed


def reads(op):
    """The names an op reads (not those its nested blocks read: their ops are seen in turn)."""
    for bindings in op.inputs.values():
        for b in bindings:
            if isinstance(b, str):
                yield b


def trace(session, inputs: dict, on_value, function: str = "main", ops=None, names=None, **run_options) -> dict:
    """Run `session` (a miltext.Session) on `inputs`, calling `on_value(key, array, op)` after
    each op for each value selected by op type (`ops`) or var name (`names`); the outputs."""
    watch = observer(on_value, Selection(ops, names))
    return session.run(inputs, function, observer=with_consts(session, function, watch), **run_options)


class NpzWriter:
    """Arrays streamed into an .npz (uncompressed, zip64) as they come: only one is held."""

    def __init__(self, f):
        self._zip = zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True)
        self.keys: dict = {}

    def add(self, key: str, value) -> None:
        key = _unique(key, self.keys)
        with self._zip.open(f"{key}.npy", "w", force_zip64=True) as f:
            np.lib.format.write_array(f, np.asarray(value), allow_pickle=False)
        self.keys[key] = None

    def close(self) -> None:
        self._zip.close()


class FolderWriter:
    """Arrays written as .npy files of a folder as they come, with INDEX mapping keys to files
    (a key is any text: its file name is the key made safe, %XX for other characters)."""

    def __init__(self, folder: str):
        self.folder, self.keys = folder, {}

    def add(self, key: str, value) -> None:
        key = _unique(key, self.keys)
        file = quote(key, safe="#") + ".npy"
        np.save(os.path.join(self.folder, file), np.asarray(value), allow_pickle=False)
        self.keys[key] = file

    def close(self) -> None:
        with open(os.path.join(self.folder, INDEX), "w", encoding="utf-8") as f:
            json.dump({"keys": self.keys}, f, indent=0)


def _unique(key: str, seen: dict) -> str:
    """`key`, or `key~N` when a name defined again has it already."""
    if key not in seen:
        return key
    n = 2
    while f"{key}~{n}" in seen:
        n += 1
    return f"{key}~{n}"


def folder_files(folder: str) -> tuple:
    """The files an earlier trace wrote into `folder` (by its index), which a new one may replace."""
    try:
        with open(os.path.join(folder, INDEX), encoding="utf-8") as f:
            files = json.load(f).get("keys", {}).values()
    except (OSError, ValueError, AttributeError):
        return (INDEX,)
    return (INDEX, *(f for f in files if isinstance(f, str) and "/" not in f))


def write_trace(path: str, run, inputs_read=(), force: bool = False):
    """Run `run(on_value)` with each value written to `path` as it comes: an .npz when the path
    ends so, else a folder of .npy files. Nothing is left at `path` when the run fails. Returns
    what `run` returns."""
    from ..files import atomic_file, atomic_folder, claim_output
    if path.lower().endswith(".npz"):
        target = claim_output(path, None, force, inputs_read)
        with atomic_file(target) as f:
            writer = NpzWriter(f)
            result = run(lambda key, value, op: writer.add(key, value))
            writer.close()
        return result
    owned = folder_files(path) if os.path.isdir(path) else (INDEX,)
    claim_output(path, owned, force, inputs_read)
    with atomic_folder(path, owned) as folder:
        writer = FolderWriter(folder)
        result = run(lambda key, value, op: writer.add(key, value))
        writer.close()
    return result
