"""The weight files a program's blob values point into, found the way Core ML finds them (by
the last part of the name, in the weights folder) and read with miltext.model.weights, the one
reader of the format."""
from __future__ import annotations

import os

from ..errors import InputError
from ..ir import DEFAULT_WEIGHT_FILE
from ..model.weights import BlobInfo, WeightFileError, WeightReader


class WeightFile:
    """One weight file, its records read on demand. What is wrong is a WeightFileError, whose
    `reason` (the message without the path) is what the checker reports."""

    def __init__(self, path: str):
        self._reader = WeightReader(path)
        self.path = path

    def record(self, offset: int) -> BlobInfo:
        """The checked record at `offset`; WeightFileError when there is no blob there."""
        return self._reader.info(offset)

    def close(self) -> None:
        self._reader.close()


class WeightFiles:
    """The weight files of one model. `path` is its weights folder, an .mlpackage, or one
    file, which then stands for the default `@model_path/weights/weight.bin`."""

    def __init__(self, path: str):
        package_weights = os.path.join(path, "Data", "com.apple.CoreML", "weights")
        if os.path.isdir(package_weights):
            path = package_weights
        self.file = path if os.path.isfile(path) else None
        self.folder = os.path.dirname(path) if self.file else path
        self.open: dict = {}

    def find(self, blob_file: str) -> str | None:
        """The file on disk for a blob value's file name, or None when it is not there."""
        if self.file and blob_file == DEFAULT_WEIGHT_FILE:
            return self.file
        candidate = os.path.join(self.folder, blob_file.replace("\\", "/").rsplit("/", 1)[-1])
        return candidate if os.path.lexists(candidate) else None

    def get(self, path: str) -> WeightFile:
        """The opened weight file at `path` (WeightFileError, kept, when it is not one)."""
        if path not in self.open:
            try:
                if not os.path.realpath(path).startswith(os.path.realpath(self.folder) + os.sep):
                    raise WeightFileError(f"{path} is a link out of its weights folder; "
                                          "a model's weight files are its own files")
                self.open[path] = WeightFile(path)
            except (WeightFileError, InputError, OSError) as e:
                self.open[path] = e if isinstance(e, WeightFileError) else WeightFileError(str(e))
        found = self.open[path]
        if isinstance(found, Exception):
            raise found
        return found

    def close(self) -> None:
        for f in self.open.values():
            if isinstance(f, WeightFile):
                f.close()
        self.open.clear()
