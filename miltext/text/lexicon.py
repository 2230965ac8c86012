"""The spelling of MIL text's tokens, each written once: names, %names, strings (escaped, and
coremltools' raw ones), dtype words, and one scanner that steps over strings and comments to
find brackets.

These are regex sources in Python's syntax. Both grammars take their terminals from here
(grammar/*.lark name them as {{PLACEHOLDERS}}, which text.grammars fills in), and everything
else that reads MIL text without the parser (the builder's split of a plain op line, the
formatter's scanner, parse errors, the language server, review, the checker's locator, the
Pygments lexer) composes its patterns from them. tests/test_lexicon.py holds them equal to
what Lark's lexer reads over the whole corpus.
"""
from __future__ import annotations

import re

# ---- names ----------------------------------------------------------------------------------
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"               # an identifier: op types, model.mil's names
NAME = r"[A-Za-z_][A-Za-z0-9_.]*"               # a MIL name: keys, functions, labels, np.True_
VAR_CHAR = r"[A-Za-z0-9_.@/]"                   # one character of a bare %name (%layer.0/relu)
BARE_VAR = "%" + VAR_CHAR + "+"                 # %x, %layer.0/relu

# ---- strings --------------------------------------------------------------------------------
# miltext's strings have backslash escapes and stay on one line; _OPEN is one without its close.
_DOUBLE_OPEN = r'"(?:[^"\\\n]|\\.)*'
_SINGLE_OPEN = r"'(?:[^'\\\n]|\\.)*"
STRING = _DOUBLE_OPEN + '"'                      # "say \"hi\""
SINGLE_QUOTED = _SINGLE_OPEN + "'"               # 'hi' (coremltools 4 printed some strings so)
PLAIN_STRING = r'"[^"\\\n]*"'                    # a string without escapes: a plain op line's
VAR = rf"%(?:{VAR_CHAR}+|{STRING})"             # %x or %"any name"

# coremltools' print writes strings and %names raw. A raw string ends at a quote that a comma
# or a closing bracket follows, and goes on over a line break unless the next line starts a
# statement (an op's %name, a `}`), which a `)` left out before it would otherwise swallow;
# a raw name runs up to the colon-space before its type.
_RAW_DOUBLE = r'"(?:[^"\n]|"(?![,)\]]|\s*\))|\n(?![ \t]*[%}]))*"(?=\s*[,)\]])'
RAW_STRING = _RAW_DOUBLE + r'|"[^"\n]*"|' + SINGLE_QUOTED
RAW_VAR = r"%(?:[^\s,()\[\]=:]|:(?!\s))+"

# For reading text that may be broken: a string whose quote is never closed runs to the end
# of its line.
STRING_TO_EOL = _DOUBLE_OPEN + '"?'
STRINGS_TO_EOL = f"{STRING_TO_EOL}|{_SINGLE_OPEN}'?"
RAW_STRINGS_TO_EOL = _RAW_DOUBLE + r'|"[^"\n]*"?|' + _SINGLE_OPEN + "'?"

COMMENT = r"#[^\n]*"

# ---- dtypes ---------------------------------------------------------------------------------
# MIL's dtype names (miltext.dtypes holds what each is), in the order messages list them.
DTYPE_NAMES = ("bool", "string", "fp16", "fp32", "fp64", "bf16", "int4", "int8", "int16", "int32",
               "int64", "uint1", "uint2", "uint3", "uint4", "uint6", "uint8", "uint16", "uint32",
               "uint64", "fp8e4m3fn", "fp8e5m2")
# coremltools 4's print spelled the integer dtypes so (dtypes.ALIASES says which each is)
COREMLTOOLS4_DTYPES = ("i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64")
# other words the grammar reads as a dtype: the proto's 0, coremltools' str and int
OTHER_DTYPE_WORDS = ("unused", "str", "int")
DTYPE_NAME = "|".join(DTYPE_NAMES)                       # alternatives, without a group
COREMLTOOLS4_DTYPE = "|".join(COREMLTOOLS4_DTYPES)
# the DTYPE token of MIL text: also an unknown code (dtype40), never the start of a %name's rest
DTYPE = (rf"(?:{COREMLTOOLS4_DTYPE}|{DTYPE_NAME}|unused|dtype-?[0-9]+|str|int)"
         rf"(?!{VAR_CHAR})")

# Storage fields of a TensorValue, written `floats: [...]` (grammar/mil.lark's STORAGE)
STORAGE_WORDS = ("floats", "ints", "bools", "strings", "longInts", "doubles", "bytes", "tensor",
                 "tuple", "list", "dict")
STORAGE_WORD = "|".join(STORAGE_WORDS)


# ---- the scanner ----------------------------------------------------------------------------
_SCANNERS: dict = {}


def scanner(raw: bool = False, brackets: bool = True) -> re.Pattern:
    """One pattern to step through MIL text without its parser: each match is a comment (group
    `comment`), a string (`string`; one never closed runs to the end of its line), in
    coremltools' print (`raw`) a raw %name, which may hold quotes and `#` (`name`), and with
    `brackets` a bracket or brace (`open`, `close`). What lies between matches is code."""
    key = (raw, brackets)
    found = _SCANNERS.get(key)
    if found is None:
        parts = [f"(?P<name>{RAW_VAR})"] if raw else []
        parts += [f"(?P<comment>{COMMENT})",
                  f"(?P<string>{RAW_STRINGS_TO_EOL if raw else STRINGS_TO_EOL})"]
        if brackets:
            parts += [r"(?P<open>[(\[{])", r"(?P<close>[)\]}])"]
        found = _SCANNERS[key] = re.compile("|".join(parts))
    return found
