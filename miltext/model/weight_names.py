"""Which const each blob of a weight file holds, so that textconv (`git diff`, `git log -p`) shows
a changed weight as one changed line naming its const. The names come from the model that goes
with the file:

- a file in a model's `weights/` folder: the model beside that folder (a package's
  model.mlmodel, an unpacked folder's model.mil). git hands over the work tree's file itself;
- a copy with nothing beside it (git's temporary copy of a blob, the working folder then the
  repository's top): the newest version of the repository that holds that blob as a
  `.../weights/weight.bin`, the index first, then the newest commit that brought or replaced
  it, and the model of the same package in that version. So a const renamed later while its
  weights stayed shows under its later name.

Every git command shares one deadline (DEADLINE): git runs textconv once per file version and
waits for it. A model not found in time, or one that does not fit the file (it names a blob the
file lacks, or one of another dtype or size), leaves the blobs unnamed: the digest lines stand.
"""
from __future__ import annotations

import os
import subprocess
import time

MODELS = ("model.mlmodel", "model.mil")   # beside a package's weights folder, or an unpacked folder's
WEIGHTS = "weights/weight.bin"
BLOB_FILE = "@model_path/" + WEIGHTS
DEADLINE = 2.0            # seconds for all the git commands of one textconv
MODEL_LIMIT = 64 << 20    # bytes of a model read to name blobs (an ML program's, weights apart, is small)


def blob_labels(path: str) -> dict:
    """{offset: "%const: (shape, dtype)"} for the blobs of the weight file `path` that a model
    going with it names; {} when none does. Never fails: the names are a help, not the text."""
    try:
        program = _program_beside(path)
        if program is None:
            program = _program_in_git(path, time.monotonic() + DEADLINE)
        return _fitting_labels(path, program) if program is not None else {}
    except Exception:   # a model that cannot be read or found: the blobs stay unnamed
        return {}


def _program_beside(path: str):
    """The program of the model whose weights folder holds `path`, or None."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.basename(path) != "weight.bin" or os.path.basename(folder) != "weights":
        return None
    from .io import read_model
    for name in MODELS:
        model = os.path.join(os.path.dirname(folder), name)
        if os.path.isfile(model) and os.path.getsize(model) <= MODEL_LIMIT:
            return read_model(model).program
    return None


def _program_in_git(path: str, deadline: float):
    """The program of the model that goes with the blob `path` holds in the current repository
    (see the module's doc), or None."""
    from ..files import open_regular
    with open_regular(path, "weight file") as f:
        blob = _git(deadline, "hash-object", "--no-filters", "--stdin", stdin=f)
    if not blob:
        return None
    blob = blob.decode().strip()
    staged = _git(deadline, "ls-files", "-s", "-z", "--", "*" + WEIGHTS)
    if staged is None:
        return None   # not in a repository
    places = [("", p) for p in _staged_paths(staged, blob)]
    found = _model_blob(places, blob, deadline)
    if found is None:
        log = _git(deadline, "log", "--all", f"--find-object={blob}", "--format=%x01%H", "--name-only",
                   "-z", "-n", "1", "--", "*" + WEIGHTS)
        places = [(rev, p) for commit, paths in _commits(log or b"") for p in paths
                  for rev in (commit + ":", commit + "^:")]   # brought, or replaced, by the commit
        found = _model_blob(places, blob, deadline)
    if found is None:
        return None
    name, model_id = found
    data = _git(deadline, "cat-file", "blob", model_id)
    return None if data is None else _program_from_bytes(name, data)


def _staged_paths(listing: bytes, blob: str) -> list:
    """The paths of `git ls-files -s -z` output whose blob is `blob`."""
    paths = []
    for entry in listing.split(b"\0"):
        info, _, name = entry.partition(b"\t")
        if name and info.split()[1].decode() == blob:
            paths.append(name.decode("utf-8", "surrogateescape"))
    return paths


def _commits(log: bytes) -> list:
    """(commit, paths) of `git log --format=%x01%H --name-only -z` output."""
    found = []
    for entry in log.split(b"\x01")[1:]:
        commit, *paths = [p.strip(b"\n") for p in entry.split(b"\0")]
        found.append((commit.decode(), [p.decode("utf-8", "surrogateescape") for p in paths if p]))
    return found


def _model_blob(places: list, blob: str, deadline: float):
    """(model file name, its blob id) of the first (revision, weights path) of `places` where
    the weights are `blob` and a model is beside their folder, or None."""
    places = [(rev, path) for rev, path in places if path.endswith(WEIGHTS) and path[:-len(WEIGHTS)][-1:] in ("", "/")
              and "\n" not in path]
    if not places:
        return None
    queries = [f"{rev}{path[:-len(WEIGHTS)]}{name}" for rev, path in places for name in (WEIGHTS, *MODELS)]
    answer = _git(deadline, "cat-file", "--batch-check=%(objectname) %(objectsize)",
                  stdin="".join(q + "\n" for q in queries).encode("utf-8", "surrogateescape"))
    if answer is None:
        return None
    rows = [line.split() for line in answer.decode().splitlines()]
    step = 1 + len(MODELS)
    for at in range(0, len(rows) - step + 1, step):
        if rows[at][0] != blob:
            continue
        for name, row in zip(MODELS, rows[at + 1:at + step]):
            if row[1] != "missing" and int(row[1]) <= MODEL_LIMIT:
                return name, row[0]
    return None


def _program_from_bytes(name: str, data: bytes):
    if name.endswith(".mil"):
        from ..files import decode_text
        from .text import parse_model
        return parse_model(decode_text(data), name).program
    from .mlmodel import model_from_bytes
    return model_from_bytes(data, name, None).program


def _git(deadline: float, *args, stdin=None) -> bytes | None:
    """What `git ARGS` prints, or None when it fails, is not there, or the deadline passes."""
    left = deadline - time.monotonic()
    if left <= 0:
        return None
    given = {"input": stdin} if isinstance(stdin, bytes) else {"stdin": stdin or subprocess.DEVNULL}
    try:
        result = subprocess.run(["git", *args], **given, capture_output=True, timeout=left)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout if result.returncode == 0 else None


def _fitting_labels(path: str, program) -> dict:
    """{offset: label} of the blobs `program` keeps in weights/weight.bin, when every one of them
    is in `path` as its type says; {} when one is not (then this is not the file's model)."""
    from ..ir import Blob, TensorType
    from ..ir.walk import operations
    from ..text.mil.printer import type_text
    from .weights import WeightReader
    with WeightReader(path) as reader:
        records = {info.offset: info for info in reader.blobs()}
    names: dict = {}
    for op in operations(program):
        for key, value in op.attributes.items():
            blob = getattr(value, "data", None)
            if not isinstance(blob, Blob) or blob.file != BLOB_FILE or not op.outputs:
                continue
            info, t = records.get(blob.offset), value.type
            if info is None or isinstance(t, TensorType) and (
                    info.dtype != t.dtype or t.element_count not in (None, info.count)):
                return {}
            name = "%" + op.outputs[0].name + ("" if key == "val" else "." + key)
            names.setdefault(blob.offset, []).append((name, type_text(t)))
    return {offset: ", ".join(n for n, _ in found) + ": " + found[0][1] for offset, found in names.items()}
