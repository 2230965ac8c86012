"""The weight file of an ML program (`weight.bin`, Core ML's blob storage version 2, whose layout
miltext.blob_storage describes): reading, writing and describing it. Elements are packed as
`packing` packs them (sub-byte dtypes LSB first), the same as `TensorValue.bytes`.
"""
from __future__ import annotations

import os
from collections import namedtuple

from .. import dtypes, packing
from ..blob_storage import BLOB_CODES, HEADER, RECORD, SENTINEL, VERSION, align
from ..errors import InputError
from ..files import atomic_file, open_regular
from ..lazy import numpy as np

_DTYPE_OF_CODE = {code: name for name, code in BLOB_CODES.items()}
DIGEST_LENGTH = 8  # hex digits of sha256 shown beside a blob reference
_CHUNK = 1 << 24   # bytes read at a time from large blobs


class WeightFileError(InputError):
    """A weight file, or a blob in it, that is not what blob storage v2 says it must be.
    `reason` is the message without the file's path (the checker names the file itself)."""

    def __init__(self, message: str, reason: str | None = None):
        super().__init__(message)
        self.reason = reason or message


class BlobInfo(namedtuple("BlobInfo", "offset dtype data_offset size padding_bits")):
    """One blob's metadata record: the offset of the record (what a BlobFileValue holds), the
    dtype's name, where the data is, its size in bytes, and the unused bits at the end of
    sub-byte data. (Not a dataclass: git's textconv reads weight files, and dataclasses is
    a tenth of its start-up.)"""
    __slots__ = ()

    @property
    def count(self) -> int:
        """The number of elements the data holds."""
        return (self.size * 8 - self.padding_bits) // dtypes.by_name(self.dtype).bits


class WeightReader:
    """Reads blobs from a weight file, checking each record it touches."""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._file = open_regular(self.path, "weight file")
        try:
            self.file_size = os.fstat(self._file.fileno()).st_size
            if self.file_size < HEADER.size:
                raise WeightFileError(f"{self.path} is not a weight file (blob storage version {VERSION}): "
                                      f"it has {self.file_size} bytes, less than a header",
                                      f"{self.name} is not a weight file (blob storage version {VERSION})")
            self.count, version = HEADER.unpack(self._read(0, HEADER.size, "the header"))
            if version != VERSION:
                raise WeightFileError(f"{self.path} is not a weight file: weight file version {version}; only "
                                      f"version {VERSION} is known",
                                      f"{self.name} is not a weight file (blob storage version {VERSION})")
        except BaseException:
            self._file.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self._file.close()

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    def error(self, message: str) -> WeightFileError:
        return WeightFileError(f"{self.path}: {message}", message)

    def _read(self, offset: int, size: int, what: str) -> bytes:
        if offset + size > self.file_size:
            raise self.error(f"truncated: {what} needs bytes {offset} to {offset + size}, "
                             f"but the file has {self.file_size}")
        self._file.seek(offset)
        return self._file.read(size)

    def info(self, offset: int) -> BlobInfo:
        """The checked metadata record at `offset`."""
        if offset < HEADER.size:
            raise self.error(f"offset {offset} is inside the header of {self.name}")
        if offset + RECORD.size > self.file_size:
            raise self.error(f"offset {offset} is past the end of {self.name} ({self.file_size} bytes)")
        sentinel, code, size, data_offset, padding = RECORD.unpack(self._read(offset, RECORD.size, f"blob {offset}"))
        if sentinel != SENTINEL:
            raise self.error(f"no blob starts at offset {offset} of {self.name}: bad sentinel 0x{sentinel:08x} "
                             f"(a record starts with 0x{SENTINEL:08X})")
        name = _DTYPE_OF_CODE.get(code)
        if name is None:
            raise self.error(f"blob {offset} has unknown dtype code {code}")
        if data_offset != offset + RECORD.size:
            raise self.error(f"blob {offset}: its data offset {data_offset} does not follow its record")
        if data_offset + size > self.file_size:
            raise self.error(f"truncated: blob {offset} needs {size} bytes of data from {data_offset}, "
                             f"but the file has {self.file_size}")
        dt = dtypes.by_name(name)
        if padding and (not dt.sub_byte or padding >= 8 or padding > size * 8):
            raise self.error(f"blob {offset}: {padding} padding bits do not fit {name} data")
        if (size * 8 - padding) % dt.bits:
            raise self.error(f"blob {offset}: {size} bytes are not whole {name} elements")
        return BlobInfo(offset, name, data_offset, size, padding)

    def expect(self, offset: int, dtype: str, count: int | None = None) -> BlobInfo:
        """The record at `offset`, checked to hold `count` elements of `dtype`."""
        info = self.info(offset)
        if info.dtype != dtype:
            raise self.error(f"blob {offset} holds {info.dtype}, not {dtype}")
        if count is not None and info.count != count:
            raise self.error(f"blob {offset} holds {info.count} elements, not {count}")
        return info

    def data(self, offset: int) -> bytes:
        """The raw (packed) data of the blob at `offset`."""
        info = self.info(offset)
        return self._read(info.data_offset, info.size, f"blob {offset}")

    def read(self, offset: int, dtype: str | None = None, count: int | None = None) -> np.ndarray:
        """The elements of the blob at `offset`, decoded (as `dtypes` decodes `dtype`)."""
        info = self.info(offset) if dtype is None else self.expect(offset, dtype, count)
        dt = dtypes.by_name(info.dtype)
        raw = self._read(info.data_offset, info.size, f"blob {offset}")
        values = packing.unpack(dt, raw, info.count)
        if values is None:
            raise self.error(f"blob {offset}: its padding bits are not zero")
        return values

    def read_slices(self, offset: int, elements: int = _CHUNK):
        """The elements of the blob at `offset`, decoded a slice of at most `elements` at a
        time (whole bytes each), so that a blob of any size is read in bounded memory."""
        info = self.info(offset)
        dt = dtypes.by_name(info.dtype)
        step = max(elements // 8, 1) * 8         # 8 elements are whole bytes at any width
        for start in range(0, info.count, step):
            count = min(step, info.count - start)
            at, size = info.data_offset + start * dt.bits // 8, (count * dt.bits + 7) // 8
            values = packing.unpack(dt, self._read(at, size, f"blob {offset}"), count)
            if values is None:
                raise self.error(f"blob {offset}: its padding bits are not zero")
            yield values

    def digest(self, offset: int) -> str:
        """A short sha256 of the blob's data: enough to see in a diff that it changed."""
        info = self.info(offset)
        import hashlib  # here, not at the top: textconv's start-up (see miltext.lazy)
        h = hashlib.sha256()
        at, end = info.data_offset, info.data_offset + info.size
        while at < end:
            size = min(_CHUNK, end - at)
            h.update(self._read(at, size, f"blob {offset}"))
            at += size
        return h.hexdigest()[:DIGEST_LENGTH]

    def blobs(self) -> list[BlobInfo]:
        """Every blob, in file order, checked; the header's count must agree."""
        found, offset = [], HEADER.size
        while offset < self.file_size:
            info = self.info(offset)
            found.append(info)
            offset = align(info.data_offset + info.size)
        if len(found) != self.count:
            raise self.error(f"the header says {self.count} blobs, the file holds {len(found)}")
        return found


class WeightWriter:
    """Writes a weight file blob by blob; the file appears (atomically) when the writer closes
    without an error."""

    def __init__(self, path, base=None):
        """`base`: a weight file whose blobs the new one starts with, at the same offsets."""
        self._context = atomic_file(path)
        self._file = self._context.__enter__()
        try:
            if base is None:
                self._file.write(bytes(HEADER.size))
                self._end, self.count = HEADER.size, 0
            else:
                with WeightReader(base) as reader:
                    self.count = reader.count
                    reader._file.seek(0)
                    while chunk := reader._file.read(_CHUNK):
                        self._file.write(chunk)
                self._end = self._file.tell()
        except BaseException as e:
            self._context.__exit__(type(e), e, e.__traceback__)
            raise

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is None:
            self.close()
        else:
            self._context.__exit__(kind, value, tb)

    def add(self, dtype: str, values) -> int:
        """Append `values` (flattened, C order) as a `dtype` blob; returns its offset."""
        dt = dtypes.by_name(dtype)
        if dt.name not in BLOB_CODES:
            raise ValueError(f"a weight file cannot hold {dt.name} blobs")
        values = np.asarray(values).reshape(-1)
        raw = packing.pack(dt, values)
        return self.add_packed(dt.name, raw, len(raw) * 8 - values.size * dt.bits)

    def add_packed(self, dtype: str, raw: bytes, padding_bits: int = 0) -> int:
        """Append already packed data; returns its offset."""
        return self.add_stream(dtype, len(raw), padding_bits, [raw])

    def add_stream(self, dtype: str, size: int, padding_bits: int, chunks, progress=None) -> int:
        """Append a blob of `size` bytes of packed data given piece by piece (`chunks`), so
        that no more than a piece is ever in memory; returns its offset."""
        offset = align(self._end)
        self._file.write(bytes(offset - self._end))
        self._file.write(RECORD.pack(SENTINEL, BLOB_CODES[dtype], size, offset + RECORD.size, padding_bits))
        written = 0
        for chunk in chunks:
            self._file.write(chunk)
            written += len(chunk)
            if progress is not None:
                progress.advance(len(chunk), "weights")
        if written != size:
            raise ValueError(f"a {dtype} blob of {size} bytes was given {written}")
        self._end = offset + RECORD.size + size
        self.count += 1
        return offset

    def close(self) -> None:
        self._file.seek(0)
        self._file.write(HEADER.pack(self.count, VERSION))
        self._file.seek(0, os.SEEK_END)
        self._context.__exit__(None, None, None)


def write_weights(path, blobs) -> list[int]:
    """A weight file of `(dtype, values)` blobs; returns their offsets."""
    with WeightWriter(path) as writer:
        return [writer.add(dtype, values) for dtype, values in blobs]


def is_weight_file(path: str) -> bool:
    """A weight file by its name (`weight.bin`, or any `.bin` that starts like one)."""
    if not path.lower().endswith(".bin") or not os.path.isfile(path):
        return False
    if path.lower().endswith("weight.bin"):
        return True
    try:
        with open_regular(path, "weight file") as f:
            head = f.read(HEADER.size + 4)
    except InputError:
        return False
    return len(head) >= HEADER.size and HEADER.unpack(head[:HEADER.size])[1] == VERSION


def describe(path, labels: dict | None = None) -> str:
    """A weight file as text, one line per blob in file order with its dtype, size and digest.
    No offsets: each follows from the blobs before it, and a blob inserted or removed then
    changes its own line only (the digests match those `print --weight-digests` shows).
    `labels` ({offset: "%const: (shape, dtype)"}, weight_names) name the blobs it has."""
    labels = labels or {}
    with WeightReader(path) as reader:
        lines = [f"# weight file: {reader.count} blobs, {reader.file_size} bytes (blob storage v{VERSION})"]
        for info in reader.blobs():
            what = labels.get(info.offset) or f"blob: {info.count} x {info.dtype}"
            lines.append(f"{what}, {info.size} bytes, sha256:{reader.digest(info.offset)}")
    return "\n".join(lines) + "\n"


def replace_blob(path, offset: int, values) -> None:
    """Give the blob at `offset` new values of its own dtype and size, in place: the rest of
    the file stays byte for byte (rewritten atomically)."""
    with WeightReader(path) as reader:
        info = reader.info(offset)
    dt = dtypes.by_name(info.dtype)
    values = np.asarray(values).reshape(-1)
    if values.size != info.count:
        raise WeightFileError(f"{path}: blob {offset} holds {info.count} {info.dtype} elements, "
                              f"not {values.size}")
    raw = packing.pack(dt, values)
    with atomic_file(path) as out, open_regular(path, "weight file") as source:
        while chunk := source.read(_CHUNK):
            out.write(chunk)
        out.seek(info.data_offset)
        out.write(raw)
