"""`miltext diff` as git's external diff driver (`diff.miltext.command`).

git gives the driver PATH OLD-FILE OLD-HEX OLD-MODE NEW-FILE NEW-HEX NEW-MODE for each file that
differs, the files often temporary copies with nothing beside them, and each of a package's
files (model.mlmodel, weights/weight.bin) on its own. So each side is put back together with
its sibling of the same version: a model with its weights/weight.bin, a weight file with the
model.mlmodel beside its folder. A sibling is the work tree's when the file is the work tree's,
else the one in the index, in HEAD, or in the newest commit that brought that version of the
file. A weight file whose model is the same on both sides then shows as the consts whose
weights changed; one whose model changed too is left to the model's diff (it shows as its list
of blobs). The driver never fails: what it cannot compare by structure shows as the plain diff
of its text (`miltext textconv`'s).
"""
from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import tempfile

NULL = "/dev/null"
MODELS, WEIGHTS = ("model.mlmodel", "model.mil"), "weights/weight.bin"


def external_diff(argv: list, context: int = 3) -> str:
    from ..errors import InputError
    if len(argv) < 7:
        raise InputError(f"miltext diff --git-external: git gives seven arguments, not {len(argv)}")
    path, old_file, old_hex, _, new_file, new_hex, _ = argv[:7]
    header = f"diff --miltext a/{path} b/{path}\n"
    with tempfile.TemporaryDirectory(prefix="miltext-diff-") as scratch:
        try:
            text = _structural(path, (old_file, old_hex), (new_file, new_hex), scratch, context)
        except Exception:   # git shows whatever this prints: the plain text diff then
            text = None
        if text is None:
            text = _plain(path, old_file, new_file, context)
    return header + text if text else ""


def _structural(path, old, new, scratch, context) -> str | None:
    from . import Side, compare
    if NULL in (old[0], new[0]):
        return None
    top = _git("rev-parse", "--show-toplevel")
    folders = [os.path.join(scratch, "a"), os.path.join(scratch, "b")]
    if path.endswith(WEIGHTS):
        models = None
        for name in MODELS:   # beside a package's weights, or an unpacked folder's
            found = [_sibling(top, path, *side, path[:-len(WEIGHTS)] + name, folder) for side, folder in zip((old, new), folders)]
            if None not in found:
                models = found
                break
        if models is None or _git("hash-object", "--", models[0]) != _git("hash-object", "--", models[1]):
            return None
        files = [_assemble(model, side[0], folder) for model, side, folder in zip(models, (old, new), folders)]
    elif path.endswith(MODELS):
        weights = os.path.join(os.path.dirname(path), WEIGHTS)
        files = [_assemble(side[0], _sibling(top, path, *side, weights, folder), folder, os.path.basename(path))
                 for side, folder in zip((old, new), folders)]
    else:   # a .pb: its blobs, if any, are where @model_path says
        files = [old[0], new[0]]
    a, b = Side.read(files[0], f"a/{path}"), Side.read(files[1], f"b/{path}")
    try:
        text = compare(a, b).text(context)
    finally:
        a.close()
        b.close()
    return text + _form_changes(*files) if text else text


def _form_changes(old: str, new: str) -> str:
    """The weights whose representation changed (review.compression), or "" when that cannot
    be worked out: the structural diff stands without it."""
    from ..model import read_model
    from .compression import report
    try:
        return report(read_model(old), read_model(new))
    except Exception:   # whatever it is, git still gets the diff
        return ""


def _assemble(model: str, weights: str | None, folder: str, name: str | None = None) -> str:
    """A copy of a model file in `folder`, with a copy of `weights` in its weights/: a model of
    one version, whole."""
    os.makedirs(os.path.join(folder, "weights"), exist_ok=True)
    target = os.path.join(folder, name or os.path.basename(model))
    if os.path.abspath(model) != target:
        shutil.copyfile(model, target)
    if weights is not None and os.path.abspath(weights) != os.path.join(folder, WEIGHTS):
        shutil.copyfile(weights, os.path.join(folder, WEIGHTS))
    return target


def _sibling(top: str, path: str, file: str, blob_hex: str, sibling: str, folder: str) -> str | None:
    """A file holding the version of `sibling` (a path in the repository) that goes with this
    version of `path` (written into `folder` when it comes from git), or None."""
    if not top:
        return None
    here, there = os.path.join(top, path), os.path.join(top, sibling)
    if os.path.exists(file) and os.path.exists(here) and os.path.samefile(file, here):
        return there if os.path.isfile(there) else None
    sibling_hex = _sibling_blob(path, sibling, blob_hex)
    if not sibling_hex:
        return None
    os.makedirs(os.path.join(folder, "weights"), exist_ok=True)
    out_path = os.path.join(folder, WEIGHTS if sibling.endswith(WEIGHTS) else os.path.basename(sibling))
    with open(out_path, "wb") as out:
        subprocess.run(["git", "cat-file", "blob", sibling_hex], stdout=out, check=True)
    return out_path


def _sibling_blob(path: str, sibling: str, blob_hex: str) -> str | None:
    staged = _git("ls-files", "-s", "--", path, sibling).splitlines()
    entries = {line.split("\t", 1)[1]: line.split()[1] for line in staged if "\t" in line}
    if entries.get(path) == blob_hex:
        return entries.get(sibling)
    commits = ["HEAD"] + _git("log", "--all", "--format=%H", f"--find-object={blob_hex}", "--", path).split()
    for commit in commits:
        if _git("rev-parse", "--verify", "-q", f"{commit}:{path}") == blob_hex:
            return _git("rev-parse", "--verify", "-q", f"{commit}:{sibling}") or None
    return None


def _plain(path, old_file, new_file, context) -> str:
    from ..model.file_text import textconv_text
    old = "" if old_file == NULL else textconv_text(old_file)
    new = "" if new_file == NULL else textconv_text(new_file)
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}",
                                        n=context))


def _git(*args) -> str:
    if shutil.which("git") is None:
        return ""
    result = subprocess.run(["git", *args], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else ""
