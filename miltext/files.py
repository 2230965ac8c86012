"""Writing files and folders so that nothing is ever half-written or lost: a temporary one
beside the target, then one atomic step.

A file is replaced by one rename. A folder (an .mlpackage, an unpacked model) cannot be: where
the system has renameat2(RENAME_EXCHANGE) (Linux), the new folder and the old one swap places
in one step, so the path holds the old or the new one at every instant. Elsewhere the old one is
first moved to a name of its own beside it (`.miltext-old-NAME`), which the next write of that
path puts back if a kill came between the two renames.

Every temporary name carries the writer's process id (`.miltext-PID-...`): a later write in the
same folder removes those whose process is gone, so a killed run leaves nothing behind for long.
"""
from __future__ import annotations

import errno
import os
import re
import stat
from contextlib import contextmanager

from .errors import InputError

TEMP_PREFIX = ".miltext-"
OLD_PREFIX = ".miltext-old-"


# What one file may hold before miltext refuses to read it whole (a model's text or its
# protobuf; weight files are read a blob at a time and have no such limit).
MAX_READ = 4 << 30


class UnsafePathError(InputError):
    """A path written in a model (a blob's file, the manifest's model path) that leads out of
    the model's folder."""


def join_inside(folder: str, relative: str, root: str | None = None) -> str | None:
    """`folder`/`relative` (a path written with /), or None when it leads out of `root` (by
    default `folder`): an absolute path, a `..`, or a link, anywhere on the way, to somewhere
    else."""
    parts = relative.replace("\\", "/").split("/")
    if not relative or "\x00" in relative or relative.startswith(("/", "\\")) or os.path.isabs(relative) or ".." in parts \
            or re.match(r"[A-Za-z]:", relative):
        return None
    path = os.path.join(folder, *[p for p in parts if p not in ("", ".")])
    if not os.path.realpath(path).startswith(os.path.realpath(root or folder) + os.sep):
        return None
    return path


class UnreadableError(InputError):
    """A path miltext will not, or cannot, read; `reason` is the message without the path."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.reason = reason


def open_regular(path, what: str = "file"):
    """`path` opened for reading in binary, refused (UnreadableError) unless it is a regular
    file: a FIFO would block for ever, a device (/dev/zero) never end. Links are followed; the
    caller checks where they lead."""
    path = os.fspath(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise UnreadableError(path, f"cannot read: {e.strerror or e}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise UnreadableError(path, f"{_kind(mode)}, not a regular {what}; miltext reads only regular files")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path, what: str = "file", limit: int = MAX_READ) -> bytes:
    """The whole of a regular file (see open_regular), its size checked before reading."""
    with open_regular(path, what) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise UnreadableError(os.fspath(path), f"{size:,} bytes, more than the {limit:,} miltext reads at once")
        try:
            return f.read(size)
        except OSError as e:
            raise UnreadableError(os.fspath(path), f"cannot read: {e.strerror or e}") from None


BOM = "\ufeff"   # the byte-order mark some editors put first in a UTF-8 file


def decode_text(data: bytes) -> str:
    """UTF-8 text as miltext reads every text file: a leading byte-order mark is no part of the
    text, so it is dropped and line 1 column 1 is the first character after it.
    UnicodeDecodeError when `data` is not UTF-8."""
    return data.decode("utf-8-sig")


# ---- what a command may write: the contract of docs/safety.md ("What miltext writes") -------

def claim_output(path, owned: tuple | None = None, force: bool = False, inputs=()) -> str:
    """The path to write for the output `path`, once it is sure that writing it loses nothing
    miltext did not write; else InputError, before anything is written. Every command that
    writes an output asks this first (and the writers ask again).

    `owned` is None for an output that is one file, else the files (relative, with /) that make
    the folder this command writes. A path that exists is replaced only when it is that kind of
    output: a regular file, or a folder holding nothing but the owned files (at any depth; no
    link). It is refused, even with `force`, when it is one of `inputs` or holds one, when it is
    a folder where a file goes (or a file where a folder goes), and when a folder holds any
    other file. A link is refused unless `force`, which writes where it leads (the link stays)."""
    path = os.fspath(path)
    if not os.path.lexists(path):
        return path
    real = os.path.realpath(path)
    for source in inputs:
        if source is None or source == "-" or not os.path.lexists(source):
            continue
        read = os.path.realpath(source)
        if read == real or read.startswith(real.rstrip(os.sep) + os.sep):
            what = "is the input" if read == real else f"holds {source}, an input"
            raise InputError(f"{path}: error: this {what} of this command; write the output elsewhere")
    if os.path.islink(path):
        if not force:
            raise InputError(f"{path}: error: a link (to {os.readlink(path)}); miltext does not replace a link: "
                             "name the file it leads to, or --force writes there and keeps the link")
        return claim_output(real, owned, False, inputs)
    mode = os.stat(path).st_mode
    if owned is None:
        if not stat.S_ISREG(mode):
            raise InputError(f"{path}: error: {_kind(mode)}, not a file; miltext writes a file here and "
                             "replaces nothing else, even with --force")
        return path
    if not stat.S_ISDIR(mode):
        raise InputError(f"{path}: error: {_kind(mode)}, not a folder; miltext writes a folder here and "
                         "replaces nothing else, even with --force")
    foreign = _first_foreign(path, owned)
    if foreign is not None:
        raise InputError(f"{path}: error: holds {foreign}, which miltext does not write there; it replaces a "
                         f"folder only when that holds nothing but {', '.join(owned)} (even with --force): "
                         "write the output elsewhere or move the folder away")
    return path


def _first_foreign(folder: str, owned: tuple) -> str | None:
    """One path under `folder` (relative) that is neither an owned file nor a folder on the way
    to one (a link is always foreign), or None. It stops at the first, so a huge folder costs
    no more than a few entries of each of its folders."""
    ways = {"/".join(item.split("/")[:i]) for item in owned for i in range(1, item.count("/") + 1)}
    pending = [""]
    while pending:
        relative = pending.pop()
        with os.scandir(os.path.join(folder, relative) if relative else folder) as entries:
            for entry in entries:
                name = f"{relative}/{entry.name}" if relative else entry.name
                if entry.is_symlink():
                    return name
                if entry.is_dir() and name in ways:
                    pending.append(name)
                elif not (entry.is_file() and name in owned):
                    return name + ("/" if entry.is_dir() else "")
    return None


def _kind(mode: int) -> str:
    return "a folder" if stat.S_ISDIR(mode) else "a regular file" if stat.S_ISREG(mode) else \
        "a pipe" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else \
        "a socket" if stat.S_ISSOCK(mode) else "special"


def write_atomic(path, data: bytes, mode: int | None = None) -> None:
    """Replace `path` with `data` all at once; on any failure the old file stays as it was."""
    with atomic_file(path, mode) as f:
        f.write(data)


@contextmanager
def atomic_file(path, mode: int | None = None):
    """A binary file to write that replaces `path` only when the block ends without an error.
    It gets `mode`, else the mode (and owner) of the file it replaces, else the umask's."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(2, f"cannot write: no folder {os.path.dirname(path) or '.'}", path)
    if os.path.isdir(path):
        raise IsADirectoryError(21, "is a folder", path)
    clean_stale_temps(folder)
    with _named_after(path):
        import tempfile  # here, not at the top: textconv's start-up (see miltext.lazy)
        fd, tmp = _named(tempfile.mkstemp, folder)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        elif os.path.exists(path):
            _keep_owner_and_mode(tmp, os.stat(path))
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        with _named_after(path):
            os.replace(tmp, path)
    except BaseException as e:
        _remove(tmp)
        if isinstance(e, OSError) and e.filename in (None, tmp):
            raise _about(e, path) from None
        raise


def _keep_owner_and_mode(new: str, old: os.stat_result) -> None:
    if hasattr(os, "geteuid") and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.chown(new, old.st_uid, old.st_gid)
        except OSError:
            pass   # only root may give a file away: it becomes the writer's, as any editor's save does
    os.chmod(new, old.st_mode & 0o7777)


JOURNAL_PREFIX = ".miltext-was-"


def rewrite(path, data: bytes) -> None:
    """Give the existing file `path` the content `data` as an edit of it, not a new file: a link
    is followed (its target changes, the link stays), the mode and owner stay, and a file
    without write permission is refused (PermissionError) rather than replaced.

    A file with one name is replaced by a rename (atomic_file). A file with hard links cannot be
    (a rename would split it from its other names), so it is written over in place, which no
    system does in one step. To keep that crash-safe: (1) a journal beside it
    (`.miltext-was-NAME.journal`, written whole or not at all) gets the old and the new content,
    (2) the file is grown to its new size first (a full disk fails there, before a byte changes),
    (3) written, cut to size and fsync'd, (4) the journal goes. An error in (3) puts the old
    content back. A kill in (3) leaves the file part new, part old, and the journal: the next
    rewrite of the file finds it and finishes the new content, when the file is exactly such a
    mix; when it is anything else (changed since), it refuses and names the journal."""
    path = os.path.realpath(os.fspath(path))
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{path}: error: {_kind(st.st_mode)}, not a regular file")
    if not st.st_mode & 0o222 or not os.access(path, os.W_OK):
        raise PermissionError(errno.EACCES, "read-only (it has no write permission)", path)
    journal = finish_rewrite(path)
    if st.st_nlink == 1:
        write_atomic(path, data)
        return
    old = read_regular(path)
    write_atomic(journal, b"miltext rewrite %d\n" % len(old) + old + data, mode=0o600)  # a copy of the user's file
    try:
        _write_over(path, data, grow=len(data) > len(old))
    except BaseException:
        _write_over(path, old, grow=False)   # this failing too leaves the journal, which says so
        _remove(journal)
        raise
    os.unlink(journal)


def finish_rewrite(path) -> str:
    """Finish a rewrite of `path` that was stopped (its journal is there): the file gets its new
    content when it is part new, part old (what a kill while writing leaves), and the journal
    goes; InputError when the file has changed since. A reader of a file that may be being
    rewritten asks this first. The journal's path."""
    path = os.path.realpath(os.fspath(path))
    journal = os.path.join(os.path.dirname(path), f"{JOURNAL_PREFIX}{os.path.basename(path)}.journal")
    if not os.path.lexists(journal):
        return journal
    head, _, rest = read_regular(journal).partition(b"\n")
    size = head[len(b"miltext rewrite "):]
    size = int(size) if head.startswith(b"miltext rewrite ") and size.isdigit() and int(size) <= len(rest) else None
    now = read_regular(path)
    if size is None or not _left_by_a_kill(now, rest[:size], rest[size:]):
        raise InputError(f"{path}: error: an earlier rewrite of it was stopped half-way and the file has changed "
                         f"since; its content before that rewrite is in {journal}: put that back (or delete it), "
                         "then try again")
    if now != rest[:size]:
        _write_over(path, rest[size:], grow=False)
    os.unlink(journal)
    return journal


def _left_by_a_kill(now: bytes, old: bytes, new: bytes) -> bool:
    """Whether `now` is what writing `new` over `old` in place can leave at any instant: the
    first bytes new, the rest old (or the zeros the file was grown by)."""
    if now in (old, new):
        return True
    if not len(old) <= len(now) <= max(len(old), len(new)):
        return False
    done = len(os.path.commonprefix([now, new]))
    return now[done:] == (old + bytes(len(now) - len(old)))[done:]


def _write_over(path: str, data: bytes, grow: bool) -> None:
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        if grow and hasattr(os, "posix_fallocate"):
            try:
                os.posix_fallocate(fd, 0, len(data))
            except OSError as e:
                if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
                    raise
        _write_all(fd, data)
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view, done = memoryview(data), 0
    while done < len(data):
        done += os.pwrite(fd, view[done:done + (1 << 24)], done)


@contextmanager
def atomic_folder(path, owned: tuple):
    """A new folder to fill that replaces `path` (nothing, or a folder holding only the `owned`
    files: see claim_output) only when the block ends without an error; until then `path` stays
    as it was, and on an error the new one goes."""
    shown = os.fspath(path)
    path = os.path.abspath(shown)
    parent = os.path.dirname(path)
    os.makedirs(parent, exist_ok=True)
    recover(path)
    claim_output(shown, owned)
    clean_stale_temps(parent)
    with _named_after(path):
        import tempfile
        tmp = _named(tempfile.mkdtemp, parent)
    try:
        os.chmod(tmp, 0o777 & ~_umask())
        yield tmp
        claim_output(shown, owned)  # again: the user may have put a file there while this one was made
        with _named_after(path):
            _put_in_place(tmp, path)
    except OSError as e:
        if e.filename is None or str(e.filename).startswith(tmp):
            raise _about(e, path) from None
        raise
    finally:
        _rmtree(tmp)  # the new folder on an error, the old one after a swap


@contextmanager
def _named_after(path: str):
    """OSErrors inside name `path`, what the user asked to write, not a temporary file."""
    try:
        yield
    except OSError as e:
        raise _about(e, path) from None


def _about(e: OSError, path: str) -> OSError:
    """A copy of `e` that names `path` (a full disk while writing a temporary file is a full
    disk for the file the user named)."""
    return type(e)(e.errno, f"cannot write: {e.strerror or e}", path) if e.errno else \
        OSError(f"cannot write: {e}")


def _put_in_place(new: str, path: str) -> None:
    """Make the folder `new` be `path`; afterwards `new` holds the old folder (or nothing)."""
    if not os.path.lexists(path):
        os.rename(new, path)
        return
    if exchange(new, path):
        return
    old = _old_name(path)
    os.rename(path, old)
    try:
        os.rename(new, path)
    except BaseException:
        os.rename(old, path)  # the old folder goes back
        raise
    os.rename(old, new)  # to be removed with the temporary folder


def recover(path: str) -> None:
    """Finish what a write killed between its two renames left: the old folder goes back where
    the new one never arrived, and goes away where it did."""
    old = _old_name(path)
    if not os.path.lexists(old):
        return
    if os.path.lexists(path):
        _rmtree(old)
    else:
        os.rename(old, path)


def exchange(a: str, b: str) -> bool:
    """Swap two paths in one step (renameat2 with RENAME_EXCHANGE); False where the system or
    the file system cannot."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    import ctypes
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EPERM):
        return False
    raise OSError(code, os.strerror(code), b)


_RENAMEAT2 = []


def _renameat2():
    if not _RENAMEAT2:
        function = None
        try:
            import ctypes
            function = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
        except (OSError, ImportError, AttributeError):
            pass
        if function is not None:
            import ctypes
            function.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            function.restype = ctypes.c_int
        _RENAMEAT2.append(function)
    return _RENAMEAT2[0]


def _rmtree(path: str) -> None:
    import shutil  # here, not at the top: textconv's start-up (see miltext.lazy)
    shutil.rmtree(path, ignore_errors=True)


def clean_stale_temps(folder: str) -> None:
    """Remove the temporary files and folders that writers which no longer run left in `folder`."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        pid = _writer_pid(name)
        if pid is None or pid == os.getpid() or _alive(pid):
            continue
        full = os.path.join(folder, name)
        if os.path.isdir(full) and not os.path.islink(full):
            _rmtree(full)
        else:
            _remove(full)


def _named(make, folder: str):
    return make(prefix=f"{TEMP_PREFIX}{os.getpid()}-", suffix=".tmp", dir=folder)


def _old_name(path: str) -> str:
    return os.path.join(os.path.dirname(path), OLD_PREFIX + os.path.basename(path))


def _writer_pid(name: str) -> int | None:
    if not name.startswith(TEMP_PREFIX) or name.startswith(OLD_PREFIX) or not name.endswith(".tmp"):
        return None
    head = name[len(TEMP_PREFIX):].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _umask() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return umask


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
