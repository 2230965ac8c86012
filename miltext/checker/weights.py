"""Just enough of the weight file (blob storage v2, `weight.bin`) to say whether a blob value
points at a real blob: the file header and the 64-byte metadata record at an offset.

This is a stop-gap: miltext's full weight-file reader is being written separately, and once it
lands this module should give way to it (the checker only uses `WeightFiles.find` and
`WeightFile.record`). Layout (little-endian): a 64-byte header `u32 count, u32 version = 2`;
then for each blob a 64-byte record `u32 sentinel 0xDEADBEEF, u32 dtype code, u64 size in
bytes, u64 data offset, u64 unused bits in the last byte`, followed by the data.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

from ..errors import InputError
from ..files import open_regular
from ..ir import DEFAULT_WEIGHT_FILE

_HEADER = struct.Struct("<II")
_RECORD = struct.Struct("<IIQQQ")
RECORD_SIZE = 64
SENTINEL = 0xDEADBEEF

# The blob dtype codes of MILBlob, by the dtype names of miltext.dtypes.
BLOB_DTYPES = {1: "fp16", 2: "fp32", 3: "uint8", 4: "int8", 5: "bf16", 6: "int16", 7: "uint16",
               8: "int4", 9: "uint1", 10: "uint2", 11: "uint4", 12: "uint3", 13: "uint6",
               14: "int32", 15: "uint32", 16: "fp8e4m3fn", 17: "fp8e5m2"}


class WeightFileError(ValueError):
    pass


@dataclass
class BlobRecord:
    dtype: str            # a dtype name, or "blob dtype N" for a code MILBlob does not define
    size: int             # bytes of data
    data_offset: int
    padding_bits: int     # unused bits of the last byte (sub-byte dtypes)

    def count(self, bits: int) -> int:
        """How many elements of `bits` bits the data holds."""
        return (self.size * 8 - self.padding_bits) // bits if bits else 0


class WeightFile:
    def __init__(self, path: str):
        self.path = path
        self.file = open_regular(path, "weight file")
        self.size = os.fstat(self.file.fileno()).st_size
        header = self.file.read(_HEADER.size)
        if len(header) < _HEADER.size or _HEADER.unpack(header)[1] != 2:
            self.close()
            raise WeightFileError(f"{path} is not a weight file (blob storage version 2)")

    def record(self, offset: int) -> BlobRecord:
        """The blob whose metadata record is at `offset`; WeightFileError when there is none."""
        if offset + RECORD_SIZE > self.size:
            raise WeightFileError(f"offset {offset} is past the end of {os.path.basename(self.path)} "
                                  f"({self.size} bytes)")
        self.file.seek(offset)
        sentinel, code, size, data_offset, padding = _RECORD.unpack(self.file.read(_RECORD.size))
        if sentinel != SENTINEL:
            raise WeightFileError(f"no blob starts at offset {offset} of {os.path.basename(self.path)}")
        if data_offset + size > self.size:
            raise WeightFileError(f"the blob at offset {offset} runs past the end of "
                                  f"{os.path.basename(self.path)}")
        return BlobRecord(BLOB_DTYPES.get(code, f"blob dtype {code}"), size, data_offset, padding)

    def close(self) -> None:
        self.file.close()


class WeightFiles:
    """The weight files a program's blob values name, looked up the way Core ML does: by the
    last part of the name, in the weights folder. `path` is that folder, an .mlpackage, or one
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
