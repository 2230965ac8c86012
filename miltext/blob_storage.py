"""Core ML's blob storage version 2 (an ML program's `weight.bin`): where things are in the file.

All integers are little-endian. The file starts with a 64-byte header (u32 blob count,
u32 version = 2, reserved zeros). Each blob is a 64-byte metadata record at a 64-aligned offset
(u32 sentinel 0xDEADBEEF, u32 blob dtype, u64 size in bytes, u64 absolute offset of the data,
u64 unused bits in the last byte of sub-byte data, reserved) directly followed by its data; the
next record starts at the next multiple of 64, and the file ends with the last blob's data. A
`blob(offset)` in MIL text is the offset of a metadata record.

The reader and writer are miltext.model.weights; miltext.text.blob_layout places blobs in a file
by the same geometry, so both import it from here.
"""
from __future__ import annotations

import struct

ALIGNMENT = 64
SENTINEL = 0xDEADBEEF
VERSION = 2
HEADER = struct.Struct("<II56x")           # count, version, reserved
RECORD = struct.Struct("<IIQQQ32x")        # sentinel, dtype, size, data offset, padding bits, reserved
HEADER_SIZE = HEADER.size                  # where the first blob's record is
RECORD_SIZE = RECORD.size

# MILBlob's BlobDataType codes (not MIL.proto's DataType codes).
BLOB_CODES = {"fp16": 1, "fp32": 2, "uint8": 3, "int8": 4, "bf16": 5, "int16": 6, "uint16": 7,
              "int4": 8, "uint1": 9, "uint2": 10, "uint4": 11, "uint3": 12, "uint6": 13,
              "int32": 14, "uint32": 15, "fp8e4m3fn": 16, "fp8e5m2": 17}


def align(offset: int) -> int:
    """The first record offset at or after `offset`."""
    return -(-offset // ALIGNMENT) * ALIGNMENT
