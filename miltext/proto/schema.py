"""MIL's protobuf messages, built in a private descriptor pool.

coremltools registers its own MIL.proto under the same names in protobuf's default pool; a
private pool lets both live in one process, in either import order. Messages from the two pools
meet as serialized bytes.

The pool is built from each .proto's serialized descriptor (scripts/gen_descriptor.py writes
them). With protobuf's upb implementation (the default), the pool and the message classes come
straight from its `google._upb._message`, as protobuf's own descriptor_pool and message_factory
make them there: importing those Python layers costs more than the rest of `miltext textconv`.
"""
from __future__ import annotations

import os
import sys

from google.protobuf import message

_HERE = os.path.dirname(os.path.abspath(__file__))
FILES = ("MIL.binpb", "Model.binpb")   # in import order: Model.proto imports MIL.proto
PACKAGE = "CoreML.Specification.MILSpec"


def _upb_module():
    """protobuf's upb module when upb is the implementation in use, else None."""
    chosen = sys.modules.get("google.protobuf.internal.api_implementation")
    kind = chosen.Type() if chosen is not None else os.environ.get("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "upb")
    if kind != "upb":
        return None
    try:
        from google._upb import _message
    except ImportError:
        return None
    return _message


_upb = _upb_module()


def _build_pool():
    if _upb is not None:
        pool = _upb.DescriptorPool()
    else:
        from google.protobuf import descriptor_pool
        pool = descriptor_pool.DescriptorPool()
    for name in FILES:
        with open(os.path.join(_HERE, name), "rb") as f:
            pool.AddSerializedFile(f.read())
    return pool


POOL = _build_pool()


def message_class(full_name: str):
    """The message class of `full_name` (what protobuf's message_factory.GetMessageClass gives)."""
    descriptor = POOL.FindMessageTypeByName(full_name)
    if _upb is None:
        from google.protobuf import message_factory
        return message_factory.GetMessageClass(descriptor)
    made = getattr(descriptor, "_concrete_class", None)
    return made or _upb.MessageMeta(descriptor.name, (message.Message,),
                                    {"DESCRIPTOR": descriptor, "__module__": None})


Program = message_class(f"{PACKAGE}.Program")
Value = message_class(f"{PACKAGE}.Value")
ValueType = message_class(f"{PACKAGE}.ValueType")

# The model around a program (Model.proto): what a .mlmodel file holds.
MODEL_PACKAGE = "CoreML.Specification"
Model = message_class(f"{MODEL_PACKAGE}.Model")
FeatureDescription = message_class(f"{MODEL_PACKAGE}.FeatureDescription")
