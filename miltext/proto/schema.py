"""MIL's protobuf messages, built in a private descriptor pool.

coremltools registers its own MIL.proto under the same names in protobuf's default pool; a
private pool lets both live in one process, in either import order. Messages from the two pools
meet as serialized bytes.
"""
from __future__ import annotations

import os

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "CoreML.Specification.MILSpec"


def _build_pool() -> descriptor_pool.DescriptorPool:
    with open(os.path.join(_HERE, "schema.binpb"), "rb") as f:
        files = descriptor_pb2.FileDescriptorSet.FromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for file_proto in files.file:
        pool.Add(file_proto)
    return pool


POOL = _build_pool()


def message_class(full_name: str):
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(full_name))


Program = message_class(f"{PACKAGE}.Program")
Value = message_class(f"{PACKAGE}.Value")
ValueType = message_class(f"{PACKAGE}.ValueType")

# The model around a program (Model.proto): what a .mlmodel file holds.
MODEL_PACKAGE = "CoreML.Specification"
Model = message_class(f"{MODEL_PACKAGE}.Model")
FeatureDescription = message_class(f"{MODEL_PACKAGE}.FeatureDescription")
