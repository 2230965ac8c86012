"""The weight file (blob storage v2): every blob dtype reads back what was written, the layout is
coremltools' byte for byte, every corpus weight file reads and rewrites to the same bytes, and a
broken file is reported for what is wrong with it."""
import hashlib
import os
import struct

import numpy as np
import pytest

from miltext import dtypes, packing
from miltext.model import read_model
from miltext.model.blobs import references
from miltext.model.weights import BLOB_CODES, WeightFileError, WeightReader, WeightWriter, describe, replace_blob, write_weights
from model_cases import PACKAGES, name_of, read, weights_of


def sample(dtype: str, count: int, seed: int = 0) -> np.ndarray:
    """`count` values that `dtype` holds exactly, its extremes included."""
    rng = np.random.default_rng(seed)
    dt = dtypes.by_name(dtype)
    if dt.kind == "float":
        values = rng.standard_normal(count).astype(np.float32) * 4
        return packing.unpack(dt, packing.pack(dt, values))   # rounded to what dtype holds
    low, high = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.kind == "int" else (0, (1 << dt.bits) - 1)
    values = rng.integers(low, high, count, endpoint=True, dtype=np.int64)
    values[:2] = [low, high][:count]
    return values.astype(dt.numpy)


@pytest.mark.parametrize("dtype", sorted(BLOB_CODES))
@pytest.mark.parametrize("count", [1, 7, 64, 1001])
def test_every_blob_dtype_reads_back_what_was_written(dtype, count, tmp_path):
    values = sample(dtype, count)
    other = sample("fp16", 3, seed=1)
    path = tmp_path / "weight.bin"
    offsets = write_weights(path, [("fp16", other), (dtype, values), ("uint3", [1, 2, 3])])
    with WeightReader(path) as reader:
        got = reader.read(offsets[1], dtype, count)
        info = reader.info(offsets[1])
        assert reader.read(offsets[0], "fp16").tobytes() == other.tobytes()
        assert reader.read(offsets[2]).tolist() == [1, 2, 3]
    assert got.dtype == dtypes.by_name(dtype).numpy
    assert packing.pack(dtypes.by_name(dtype), got) == packing.pack(dtypes.by_name(dtype), values)
    assert info.count == count and info.dtype == dtype
    bits = dtypes.by_name(dtype).bits
    assert info.size == (count * bits + 7) // 8 and info.padding_bits == info.size * 8 - count * bits


def test_layout_is_64_byte_aligned_as_blob_storage_v2_says(tmp_path):
    path = tmp_path / "weight.bin"
    offsets = write_weights(path, [("fp16", np.ones(3, np.float16)), ("int4", [1, -2, 3]), ("fp32", np.ones(20, np.float32))])
    data = read(path)
    assert offsets == [64, 192, 320]
    assert struct.unpack_from("<II", data, 0) == (3, 2) and data[8:64] == bytes(56)
    for offset in offsets:
        sentinel, code, size, data_offset, padding = struct.unpack_from("<IIQQQ", data, offset)
        assert sentinel == 0xDEADBEEF and data_offset == offset + 64
        assert data[offset + 32:offset + 64] == bytes(32)
    assert struct.unpack_from("<IIQQQ", data, 192)[1:] == (BLOB_CODES["int4"], 2, 256, 4)
    assert len(data) == 320 + 64 + 80  # the file ends with the last blob's data


def test_writer_matches_coremltools_byte_for_byte(tmp_path):
    from coremltools import libmilstoragepython
    writers = {"fp16": "fp16", "fp32": "float", "uint8": "uint8", "int8": "int8", "int16": "int16",
               "uint16": "uint16", "int32": "int32", "uint32": "uint32", "int4": "int4", "uint1": "uint1",
               "uint2": "uint2", "uint3": "uint3", "uint4": "uint4", "uint6": "uint6"}
    blobs = [(dtype, sample(dtype, 5 + i)) for i, dtype in enumerate(writers)]
    theirs = tmp_path / "theirs.bin"
    writer = libmilstoragepython._BlobStorageWriter(str(theirs))
    their_offsets = [getattr(writer, f"write_{writers[d]}_data")(v.view(np.uint16) if d == "fp16" else v)
                     for d, v in blobs]
    del writer  # coremltools completes the file when its writer goes away
    assert write_weights(tmp_path / "ours.bin", blobs) == their_offsets
    assert read(tmp_path / "ours.bin") == read(theirs)


@pytest.mark.parametrize("package", PACKAGES, ids=name_of)
def test_corpus_weight_file_reads_and_rewrites_to_the_same_bytes(package, tmp_path):
    model = read_model(package)
    with WeightReader(weights_of(package)) as reader:
        blobs = reader.blobs()
        for ref in references(model.program):   # every blob the program uses, of its own type
            reader.expect(ref.blob.offset, ref.type.dtype)
        contents = [(b.dtype, reader.read(b.offset)) for b in blobs]
    assert write_weights(tmp_path / "weight.bin", contents) == [b.offset for b in blobs]
    assert read(tmp_path / "weight.bin") == read(weights_of(package))


# ---- what a broken file says ---------------------------------------------------------------

@pytest.fixture
def small(tmp_path):
    path = tmp_path / "weight.bin"
    write_weights(path, [("fp16", np.arange(10, dtype=np.float16)), ("int8", np.arange(5, dtype=np.int8))])
    return path


def patched(path, offset: int, data: bytes):
    raw = bytearray(read(path))
    raw[offset:offset + len(data)] = data
    path.write_bytes(bytes(raw))


def test_truncated_data_is_reported(small):
    small.write_bytes(read(small)[:-2])
    with WeightReader(small) as reader, pytest.raises(WeightFileError, match=r"truncated: blob 192 needs 5 bytes"):
        reader.read(192)


def test_truncated_header_is_reported(small):
    small.write_bytes(read(small)[:40])
    with pytest.raises(WeightFileError, match="is not a weight file .*less than a header"):
        WeightReader(small)


def test_bad_sentinel_is_reported(small):
    patched(small, 192, b"\x00\x00\x00\x00")
    with WeightReader(small) as reader, pytest.raises(WeightFileError, match="no blob starts at offset 192 of weight.bin: bad sentinel"):
        reader.read(192)


def test_wrong_dtype_is_reported(small):
    with WeightReader(small) as reader, pytest.raises(WeightFileError, match="blob 64 holds fp16, not fp32"):
        reader.read(64, "fp32")


def test_wrong_count_is_reported(small):
    with WeightReader(small) as reader, pytest.raises(WeightFileError, match="blob 64 holds 10 elements, not 12"):
        reader.expect(64, "fp16", 12)


@pytest.mark.parametrize("offset,message", [(4096, "past the end"), (0, "inside the header"), (100, "bad sentinel")])
def test_offset_that_is_no_blob_is_reported(small, offset, message):
    with WeightReader(small) as reader, pytest.raises(WeightFileError, match=message):
        reader.read(offset)


def test_unknown_version_and_dtype_code_are_reported(small):
    patched(small, 192 + 4, struct.pack("<I", 99))
    with WeightReader(small) as reader, pytest.raises(WeightFileError, match="unknown dtype code 99"):
        reader.info(192)
    patched(small, 4, struct.pack("<I", 3))
    with pytest.raises(WeightFileError, match="version 3; only version 2"):
        WeightReader(small)


def test_header_count_must_agree(small):
    patched(small, 0, struct.pack("<I", 5))
    with WeightReader(small) as reader, pytest.raises(WeightFileError, match="the header says 5 blobs, the file holds 2"):
        reader.blobs()


def test_error_names_the_file(small):
    with WeightReader(small) as reader, pytest.raises(WeightFileError) as info:
        reader.read(4096)
    assert str(info.value).startswith(str(small) + ": ")


# ---- changing and showing weights ----------------------------------------------------------

def test_replace_blob_changes_that_blob_only(small):
    before = read(small)
    replace_blob(small, 192, np.array([5, 4, 3, 2, 1], np.int8))
    after = read(small)
    with WeightReader(small) as reader:
        assert reader.read(192).tolist() == [5, 4, 3, 2, 1]
    assert after[:256] == before[:256] and len(after) == len(before)
    with pytest.raises(WeightFileError, match="holds 5 int8 elements, not 3"):
        replace_blob(small, 192, [1, 2, 3])


def test_describe_lists_blobs_with_digests(small):
    data = read(small)
    text = describe(small)
    assert text.splitlines() == [
        f"# weight file: 2 blobs, {len(data)} bytes (blob storage v2)",
        f"blob: 10 x fp16, 20 bytes, sha256:{hashlib.sha256(data[128:148]).hexdigest()[:8]}",
        f"blob: 5 x int8, 5 bytes, sha256:{hashlib.sha256(data[256:261]).hexdigest()[:8]}"]


def test_writer_leaves_nothing_when_it_fails(tmp_path):
    path = tmp_path / "weight.bin"
    with pytest.raises(ValueError, match="cannot hold string"):
        with WeightWriter(path) as writer:
            writer.add("fp16", [1.0])
            writer.add("string", ["x"])
    assert os.listdir(tmp_path) == []
