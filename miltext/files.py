"""Writing files so that nothing is ever half-written: a temporary file, then a rename."""
from __future__ import annotations

import os
import tempfile


def write_atomic(path, data: bytes) -> None:
    """Replace `path` with `data` all at once; on any failure the old file stays as it was."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(2, f"cannot write: no folder {os.path.dirname(path) or '.'}", path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a folder", path)
    fd, tmp = tempfile.mkstemp(prefix=".miltext-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
