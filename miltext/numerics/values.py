"""Values by key from an .npz or a trace folder (see trace.py), each read when it is asked for:
a trace of a big model is never held whole."""
from __future__ import annotations

import json
import os
import zipfile

from ..errors import InputError
from .trace import INDEX

NPZ_PROBLEMS = (ValueError, OSError, EOFError, NotImplementedError, RuntimeError, KeyError, OverflowError)


def read_npy(f, size: int, what: str, limits, held: int = 0):
    """The array of the .npy `f` (`size` bytes), its header checked first against the bytes it
    has and against --max-memory (a header may claim 10^12 elements in 144 bytes)."""
    import numpy as np

    from ..interpreter import RunError
    from ..model.weight_headers import WeightFileProblem, _npy as npy_header
    try:
        header = npy_header(f, size)
        limits.allow(header.shape, np.dtype(header.stored).itemsize, "the array", lambda: held)
        f.seek(0)
        return np.lib.format.read_array(f, allow_pickle=False)
    except (WeightFileProblem, RunError) as e:
        raise InputError(f"{what}: {e.message}") from None
    except (ValueError, OSError, EOFError, TypeError) as e:
        raise InputError(f"{what}: not a .npy file ({e})") from None


class Values:
    """The arrays of an .npz or a trace folder by key; `get` reads one."""

    def __init__(self, path: str, limits):
        self.path, self.limits = path, limits
        self._zip = None
        if os.path.isdir(path):
            self._files = _folder_index(path)
        else:
            self._files = self._open_npz(path)

    def _open_npz(self, path: str) -> dict:
        from ..files import open_regular
        f = open_regular(path)
        self._file = f
        try:
            self._zip = zipfile.ZipFile(f)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as e:
            f.close()
            raise InputError(f"{path}: not an .npz file ({e})") from None
        files = {}
        for info in self._zip.infolist():
            if not info.filename.endswith(".npy"):
                raise InputError(f"{path}: not an .npz file ({info.filename!r} is no .npy array)")
            files[info.filename[:-len(".npy")]] = info
        return files

    def keys(self):
        return self._files.keys()

    def __contains__(self, key: str) -> bool:
        return key in self._files

    def get(self, key: str):
        """The array of `key` (InputError when it cannot be read as one)."""
        entry = self._files[key]
        what = f"{self.path}: {key}"
        try:
            if self._zip is not None:
                with self._zip.open(entry) as f:
                    array = read_npy(f, entry.file_size, what, self.limits)
            else:
                with open(os.path.join(self.path, entry), "rb") as f:
                    array = read_npy(f, os.fstat(f.fileno()).st_size, what, self.limits)
        except InputError:
            raise
        except (zipfile.BadZipFile, *NPZ_PROBLEMS) as e:
            raise InputError(f"{what}: cannot be read ({e})") from None
        if array.dtype.kind not in "biuf":
            raise InputError(f"{what}: holds {array.dtype} values, not numbers")
        return array

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
            self._file.close()


def _folder_index(folder: str) -> dict:
    try:
        with open(os.path.join(folder, INDEX), encoding="utf-8") as f:
            keys = json.load(f)["keys"]
    except FileNotFoundError:
        raise InputError(f"{folder}: a folder without {INDEX}: not a trace `miltext run --trace` wrote") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise InputError(f"{folder}: {INDEX} cannot be read ({e})") from None
    if not isinstance(keys, dict) or not all(isinstance(v, str) and "/" not in v and v not in (".", "..")
                                             for v in keys.values()):
        raise InputError(f"{folder}: {INDEX} does not list its keys and .npy files")
    return keys
