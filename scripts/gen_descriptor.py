"""Compile miltext's .proto schemas into the descriptor set the package loads at run time.

    python scripts/gen_descriptor.py          # rewrites miltext/proto/schema.binpb

Needs grpcio-tools (protoc as a Python module): `pip install grpcio-tools`. miltext itself only
reads the compiled descriptor, so users never need protoc. tests/test_schema.py checks that the
committed descriptor matches the .proto sources.
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PROTO_DIR = os.path.join(ROOT, "miltext", "proto")
OUTPUT = os.path.join(PROTO_DIR, "schema.binpb")


def proto_sources() -> list[str]:
    return sorted(f for f in os.listdir(PROTO_DIR) if f.endswith(".proto"))


def compile_descriptor_set() -> bytes:
    """The serialized FileDescriptorSet of every .proto in miltext/proto (no source info)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "schema.binpb")
        cmd = [sys.executable, "-m", "grpc_tools.protoc", f"--proto_path={PROTO_DIR}",
               f"--descriptor_set_out={out}", "--include_imports", *proto_sources()]
        subprocess.run(cmd, check=True)
        with open(out, "rb") as f:
            return f.read()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", default=OUTPUT)
    args = ap.parse_args()
    data = compile_descriptor_set()
    with open(args.output, "wb") as f:
        f.write(data)
    print(f"wrote {args.output} ({len(data)} bytes) from {', '.join(proto_sources())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
