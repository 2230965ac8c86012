"""The vocabulary of model.mil, the MIL text Core ML's compiler writes into a compiled model:
opset spellings, the dialect's versions, and the words a name cannot be. Shared by its parser
and its printer; docs/modelmil.md says which of these facts are seen in real files.
"""
from __future__ import annotations

import re

from .. import dtypes

# The proto's opset (Function.opset, the key of its block) and its model.mil spelling.
IOS_OF_OPSET = {"CoreML5": "ios15", "CoreML6": "ios16", "CoreML7": "ios17", "CoreML8": "ios18",
                "CoreML9": "ios26"}
OPSET_OF_IOS = {ios: opset for opset, ios in IOS_OF_OPSET.items()}

# `program(1.0)` writes a rank-0 type tensor<int32, []>, `program(1.3)` (iOS 18 models,
# specification 9) writes int32. The proto's Program.version is 1 for both.
VERSION_1_0, VERSION_1_3 = "1.0", "1.3"
_OPSETS_OF_1_3 = frozenset(["CoreML8", "CoreML9"])

# coremltools renames vars and ops that would spell one of these (its NameSanitizer), because
# model.mil reads them as keywords; the other dtype names and `block` are keywords here too.
KEYWORDS = frozenset("""any bool program func tensor list dict tuple true false string bf16 fp16
    fp32 fp64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 state block""".split()) | frozenset(
    d for d in dtypes.NAMES if d != "unused")

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# model.mil starts `program(1.0)`; miltext's own header is `program(version=...)`.
_HEADER = re.compile(r"\s*program\s*\(\s*[0-9]")


def looks_like_modelmil(text: str) -> bool:
    """Whether `text` is in Apple's model.mil dialect, by its first line."""
    return _HEADER.match(text) is not None


def is_name(text: str) -> bool:
    """Whether model.mil can write `text` as a name (of a var, an op type, a key, ...)."""
    return bool(_IDENTIFIER.match(text)) and text not in KEYWORDS


def text_version(program) -> str:
    """The dialect version Apple's compiler writes for a program: 1.3 for models of
    specification 9 (iOS 18) and later, which hold every program with an iOS 18 opset and
    every multifunction program (coremltools saves those as specification 9)."""
    functions = program.functions.values()
    if len(program.functions) > 1 or any(fn.opset in _OPSETS_OF_1_3 for fn in functions):
        return VERSION_1_3
    return VERSION_1_0
