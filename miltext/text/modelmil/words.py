"""The vocabulary of model.mil, the MIL text Core ML's compiler writes into a compiled model:
opset spellings, the dialect's versions, and the words a name cannot be. Shared by its parser
and its printer; docs/modelmil.md says which of these facts are seen in real files.
"""
from __future__ import annotations

import re

from ... import dtypes
from .. import lexicon

# The proto's opset (Function.opset, the key of its block) and its model.mil spelling.
# CoreML3 and CoreML4 (iOS 13 and 14) are MIL opsets that no ML program uses (those need iOS 15),
# spelled as the others are so that every opset coremltools has prints.
IOS_OF_OPSET = {"CoreML3": "ios13", "CoreML4": "ios14", "CoreML5": "ios15", "CoreML6": "ios16",
                "CoreML7": "ios17", "CoreML8": "ios18", "CoreML9": "ios26"}
OPSET_OF_IOS = {ios: opset for opset, ios in IOS_OF_OPSET.items()}

# `program(1.0)` writes a rank-0 type tensor<int32, []>, `program(1.3)` writes int32. The proto's
# Program.version is 1 for both.
VERSION_1_0, VERSION_1_3 = "1.0", "1.3"
_OPSETS_OF_1_3 = frozenset(["CoreML8", "CoreML9"])
# The compiler that wrote a model.mil names itself in buildInfo's "coremlc-version". Real files
# show 3500.32.1 writing program(1.0) for ios16 and ios17 functions, and 3520.5.1 and 3600.25.1
# writing program(1.3) for a single ios17 function: from 3520 on, every file is 1.3.
_ALWAYS_1_3_FROM = (3520,)

# coremltools renames vars and ops that would spell one of these (its NameSanitizer), because
# model.mil reads them as keywords; the other dtype names are keywords here too. `block` (the
# word for a nested block) is not: coremltools leaves it alone, and it reads as a name wherever
# a name is, except as the type of an op without outputs (see name_problem).
KEYWORDS = frozenset("""any bool program func tensor list dict tuple true false string bf16 fp16
    fp32 fp64 int8 int16 int32 int64 uint8 uint16 uint32 uint64 state""".split()) | frozenset(
    d for d in dtypes.NAMES if d != "unused")
NESTED_BLOCK = "block"

_IDENTIFIER = re.compile(lexicon.IDENT + r"\Z")
# model.mil starts `program(1.0)`; miltext's own header is `program(version=...)` (a comment or a
# line break may come between). A first word `program` that no parenthesis follows is model.mil
# gone wrong (`program1.0)`, `program](1.3)`).
_HEADER = re.compile(r"\s*program(?=\s*\(\s*[0-9]|[^\s(A-Za-z_])")


def looks_like_modelmil(text: str) -> bool:
    """Whether `text` is in Apple's model.mil dialect, by its first line."""
    return _HEADER.match(text) is not None


def is_name(text: str) -> bool:
    """Whether model.mil can write `text` as a name (of a var, an op type, a key, ...)."""
    return bool(_IDENTIFIER.match(text)) and text not in KEYWORDS


def name_problem(text: str) -> str | None:
    """Why model.mil cannot write the name `text`, in the words both its printer and its
    parser use; None when it can."""
    if is_name(text):
        return None
    return (f"the name {text!r}: a name is an identifier ([A-Za-z_][A-Za-z0-9_]*) "
            "and not one of the dialect's words (tensor, fp32, state, ...)")


def op_type_problem(op_type: str, has_outputs: bool) -> str | None:
    """name_problem for an op's type: a line that starts `block(` is a nested block, so an op
    without outputs cannot be of type `block`."""
    if op_type == NESTED_BLOCK and not has_outputs:
        return ("the op type 'block' on an op without outputs: its line would start a nested "
                "block")
    return name_problem(op_type)


def read_version(program) -> str | None:
    """The version a program's model.mil header said, when the printer can write it."""
    version = program.modelmil_version
    return version if version in (VERSION_1_0, VERSION_1_3) else None


def text_version(program) -> str:
    """The dialect version Apple's compiler writes for a program. A program that a compiler of
    3520 or later wrote (its buildInfo says so) is 1.3; otherwise 1.3 is for models of
    specification 9 (iOS 18) and later, which hold every program with an iOS 18 opset and every
    multifunction program (coremltools saves those as specification 9)."""
    compiler = compiler_version(program)
    if compiler is not None and compiler >= _ALWAYS_1_3_FROM:
        return VERSION_1_3
    functions = program.functions.values()
    if len(program.functions) > 1 or any(fn.opset in _OPSETS_OF_1_3 for fn in functions):
        return VERSION_1_3
    return VERSION_1_0


_COMPILER_VERSION = re.compile(r"[0-9]+(\.[0-9]+)*\Z")


def compiler_version(program) -> tuple | None:
    """The `coremlc-version` entry of the program's buildInfo as numbers (3500, 32, 1), or None
    when there is none or it is not a dotted number."""
    info = program.attributes.get("buildInfo")
    items = getattr(getattr(info, "data", None), "items", None)
    if not items:
        return None
    for key, value in items:
        if _string(key) == "coremlc-version":
            text = _string(value)
            if text is not None and _COMPILER_VERSION.match(text):
                return tuple(int(part) for part in text.split("."))
            return None
    return None


def _string(value) -> str | None:
    """The text of a rank-0 string value, else None."""
    data = getattr(value, "data", None)
    values = getattr(data, "values", None)
    if getattr(data, "field", None) != "strings" or values is None or len(values) != 1:
        return None
    text = values[0]
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
