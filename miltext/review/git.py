"""`miltext diff` as git's external diff driver (`diff.miltext.command`).

git gives the driver PATH OLD-FILE OLD-HEX OLD-MODE NEW-FILE NEW-HEX NEW-MODE for each file that
differs, the files often temporary copies with nothing beside them, and each of a package's
files (model.mlmodel, weights/weight.bin) on its own. So that blobs compare by content, the
weight file of the same version is looked up in git: beside the file in the work tree when the
file is the work tree's, else at PATH's folder's weights/weight.bin in the index, HEAD, or the
newest commit that brought that version of the file. The driver never fails: what it cannot
compare by structure shows as the plain diff of its text (`miltext textconv`'s).
"""
from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import tempfile

NULL = "/dev/null"


def external_diff(argv: list, context: int = 3) -> str:
    from ..errors import InputError
    if len(argv) < 7:
        raise InputError(f"miltext diff --git-external: git gives seven arguments, not {len(argv)}")
    path, old_file, old_hex, _, new_file, new_hex, _ = argv[:7]
    header = f"diff --miltext a/{path} b/{path}\n"
    with tempfile.TemporaryDirectory(prefix="miltext-diff-") as scratch:
        try:
            text = _structural(path, old_file, old_hex, new_file, new_hex, scratch, context)
        except Exception:   # git shows whatever this prints: the plain text diff then
            text = _plain(path, old_file, new_file, context)
    return header + text if text else ""


def _structural(path, old_file, old_hex, new_file, new_hex, scratch, context) -> str:
    from . import Side, compare
    if path.lower().endswith(".bin") or NULL in (old_file, new_file):   # a weight file, or one side
        return _plain(path, old_file, new_file, context)
    old = Side.read(old_file, f"a/{path}", _weights_folder(path, old_file, old_hex, os.path.join(scratch, "a")))
    new = Side.read(new_file, f"b/{path}", _weights_folder(path, new_file, new_hex, os.path.join(scratch, "b")))
    try:
        return compare(old, new).text(context)
    finally:
        old.close()
        new.close()


def _plain(path, old_file, new_file, context) -> str:
    from ..cli.textconv_cmd import textconv_text
    old = "" if old_file == NULL else textconv_text(old_file)
    new = "" if new_file == NULL else textconv_text(new_file)
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}",
                                        n=context))


def _weights_folder(path: str, file: str, blob_hex: str, scratch: str) -> str | None:
    """A folder whose weights/weight.bin is the weight file of this version of `path`."""
    top = _git("rev-parse", "--show-toplevel")
    if not top:
        return None
    here = os.path.join(top, path)
    if os.path.exists(file) and os.path.exists(here) and os.path.samefile(file, here):
        return os.path.dirname(here)
    weight_path = "/".join(filter(None, [os.path.dirname(path), "weights", "weight.bin"]))
    weight_hex = _weight_blob(path, weight_path, blob_hex)
    if weight_hex is None:
        return None
    os.makedirs(os.path.join(scratch, "weights"))
    with open(os.path.join(scratch, "weights", "weight.bin"), "wb") as out:
        subprocess.run(["git", "cat-file", "blob", weight_hex], stdout=out, check=True)
    return scratch


def _weight_blob(path: str, weight_path: str, blob_hex: str) -> str | None:
    if _git("ls-files", "-s", "--", path).split()[1:2] == [blob_hex]:
        staged = _git("ls-files", "-s", "--", weight_path).split()
        return staged[1] if len(staged) > 1 else None
    commits = ["HEAD"] + _git("log", "--all", "--format=%H", f"--find-object={blob_hex}", "--", path).split()
    for commit in commits:
        if _git("rev-parse", "--verify", "-q", f"{commit}:{path}") == blob_hex:
            return _git("rev-parse", "--verify", "-q", f"{commit}:{weight_path}") or None
    return None


def _git(*args) -> str:
    if shutil.which("git") is None:
        return ""
    result = subprocess.run(["git", *args], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else ""
