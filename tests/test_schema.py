"""The MIL schema: the committed descriptor is what MIL.proto compiles to, it has every field
and DataType MIL has, and miltext's private pool lives beside coremltools' in one process."""
import os
import subprocess
import sys

import miltext
from miltext.proto import schema
from support import goldens
from support.extras import needs_coremltools

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_committed_descriptors_are_what_the_protos_compile_to():
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    try:
        import gen_descriptor
    finally:
        sys.path.pop(0)
    compiled = gen_descriptor.compile_descriptors()
    assert sorted(compiled) == sorted(schema.FILES)
    for name, data in compiled.items():
        # scripts/gen_descriptor.py writes them too
        goldens.compare(os.path.join(ROOT, "miltext", "proto", name), data)


def test_schema_has_the_newer_fields_and_every_data_type():
    value_type = schema.POOL.FindMessageTypeByName("CoreML.Specification.MILSpec.ValueType")
    assert value_type.fields_by_name["stateType"].number == 5
    data_type = schema.POOL.FindEnumTypeByName("CoreML.Specification.MILSpec.DataType")
    codes = {v.name: v.number for v in data_type.values}
    assert codes == {"UNUSED_TYPE": 0, "BOOL": 1, "STRING": 2, "FLOAT16": 10, "FLOAT32": 11,
                     "FLOAT64": 12, "BFLOAT16": 13, "INT8": 21, "INT16": 22, "INT32": 23,
                     "INT64": 24, "INT4": 25, "UINT8": 31, "UINT16": 32, "UINT32": 33, "UINT64": 34,
                     "UINT4": 35, "UINT2": 36, "UINT1": 37, "UINT6": 38, "UINT3": 39,
                     "FLOAT8E4M3FN": 40, "FLOAT8E5M2": 41}
    assert set(codes.values()) == set(miltext.dtypes.BY_CODE)


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)


CORPUS_PB = os.path.join(ROOT, "tests", "corpus", "coremltools", "torch_mlp.pb")
BOTH = f"""
import miltext
from coremltools.proto import MIL_pb2
data = open({CORPUS_PB!r}, "rb").read()
theirs = MIL_pb2.Program.FromString(data)
ours = miltext.Program.from_proto(theirs)          # a message of coremltools' pool
assert ours.to_proto().SerializeToString(deterministic=True) == data
assert MIL_pb2.Program.FromString(ours.to_proto().SerializeToString()) == theirs
print("ok")
"""


def test_miltext_then_coremltools_in_one_process():
    needs_coremltools("the test imports it")
    result = _run("import miltext.proto.schema\nimport coremltools\n" + BOTH)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_coremltools_then_miltext_in_one_process():
    needs_coremltools("the test imports it")
    result = _run("import coremltools\nimport miltext.proto.schema\n" + BOTH)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr


def test_import_miltext_stays_light():
    """git runs miltext once per file: importing it must not pull in coremltools (or the
    parser and protobuf, which load on first use)."""
    result = _run("import sys, miltext\n"
                  "heavy = [m for m in ('coremltools', 'torch', 'lark', 'google.protobuf') if m in sys.modules]\n"
                  "print(heavy)")
    assert result.returncode == 0 and result.stdout.strip() == "[]", result.stdout + result.stderr


def test_schema_builds_with_protobufs_python_implementation_too():
    """upb is protobuf's default, and the schema builds straight in it; with another
    implementation it goes through protobuf's public descriptor_pool and message_factory."""
    code = f"""
import miltext
from miltext.proto import schema
from google.protobuf.internal import api_implementation
assert api_implementation.Type() == "python" and schema._upb is None
data = open({CORPUS_PB!r}, "rb").read()
assert schema.Program.FromString(data).SerializeToString(deterministic=True) == data
assert miltext.Program.from_proto(data).to_bytes() == data
print("ok")
"""
    env = {**os.environ, "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION": "python"}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr

