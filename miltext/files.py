"""Writing files and folders so that nothing is ever half-written: a temporary one, then a rename."""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager


def write_atomic(path, data: bytes) -> None:
    """Replace `path` with `data` all at once; on any failure the old file stays as it was."""
    with atomic_file(path) as f:
        f.write(data)


@contextmanager
def atomic_file(path):
    """A binary file to write that replaces `path` only when the block ends without an error."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(2, f"cannot write: no folder {os.path.dirname(path) or '.'}", path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a folder", path)
    fd, tmp = tempfile.mkstemp(prefix=".miltext-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


@contextmanager
def atomic_folder(path):
    """A new folder to fill that replaces `path` (a folder or nothing) only when the block ends
    without an error; until then `path` stays as it was, and on an error the new one goes."""
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    if os.path.exists(path) and not os.path.isdir(path):
        raise NotADirectoryError(20, "exists and is not a folder", path)
    tmp = tempfile.mkdtemp(prefix=".miltext-", suffix=".tmp", dir=parent)
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
        if os.path.exists(path):
            old = tempfile.mkdtemp(prefix=".miltext-old-", dir=parent)
            os.rename(path, os.path.join(old, "x"))
            try:
                os.rename(tmp, path)
            except BaseException:
                os.rename(os.path.join(old, "x"), path)   # the old folder goes back
                os.rmdir(old)
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
