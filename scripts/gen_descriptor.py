"""Compile miltext's .proto schemas into the descriptors the package loads at run time.

    python scripts/gen_descriptor.py          # rewrites miltext/proto/<name>.binpb

Each .proto becomes its own serialized FileDescriptorProto (`MIL.proto` → `MIL.binpb`): the
package adds them to its pool as they are (DescriptorPool.AddSerializedFile), so loading the
schema needs none of protobuf's descriptor_pb2 (a tenth of `miltext textconv`'s start-up).
Needs grpcio-tools (protoc as a Python module): `pip install grpcio-tools`. miltext itself only
reads the compiled descriptors, so users never need protoc. tests/test_schema.py checks that the
committed descriptors match the .proto sources.
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_DIR = os.path.join(ROOT, "miltext", "proto")


def proto_sources() -> list[str]:
    return sorted(f for f in os.listdir(PROTO_DIR) if f.endswith(".proto"))


def compile_descriptors() -> dict[str, bytes]:
    """`<name>.binpb` → the serialized FileDescriptorProto of `<name>.proto` (no source info),
    for every .proto in miltext/proto."""
    from google.protobuf import descriptor_pb2
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "schema.binpb")
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"--proto_path={PROTO_DIR}",
               f"--descriptor_set_out={out}", "--include_imports", *proto_sources()]
        subprocess.run(cmd, check=True)
        with open(out, "rb") as f:
            files = descriptor_pb2.FileDescriptorSet.FromString(f.read()).file
    return {os.path.splitext(f.name)[0] + ".binpb": f.SerializeToString(deterministic=True) for f in files}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=PROTO_DIR, help="the folder to write into")
    args = ap.parse_args()
    for name, data in compile_descriptors().items():
        path = os.path.join(args.output, name)
        with open(path, "wb") as f:
            f.write(data)
        print(f"wrote {path} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
