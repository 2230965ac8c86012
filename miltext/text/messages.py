"""Parser expectations in a user's words: never a grammar's terminal name."""
from __future__ import annotations

# What each named terminal of grammar/mil.lark stands for.
_TERMINALS = {
    "VAR": "a %name", "NAME": "a name", "STRING": "a string", "SIGNED_INT": "an integer",
    "FLOAT": "a number", "SPECIAL_FLOAT": "a number", "NAN_BITS": "a number",
    "DTYPE": "a dtype such as fp32", "TRUE": "True", "FALSE": "False", "B64": 'b64"..." data',
    "STORAGE": "a storage kind such as floats:", "OBJECT_REPR": "a value",
    "SYM_OP": "an operator", "LPAR": "'('", "LSQB": "'['", "LBRACE": "'{'", "RPAR": "')'",
    "RSQB": "']'", "RBRACE": "'}'", "COMMA": "','", "COLON": "':'", "EQUAL": "'='",
    "STAR": "'*'", "QMARK": "'?'", "CIRCUMFLEX": "'^'", "$END": "the end of the text",
    # grammar/modelmil.lark (its parser puts every token that starts a type under MODELMIL_TYPE)
    "VERSION": "a version such as 1.0", "MODELMIL_TYPE": "a type such as tensor<fp32, [2]>",
}
_VALUE_START = {"FLOAT", "SIGNED_INT", "STRING", "TRUE", "FALSE", "B64", "SPECIAL_FLOAT", "NAN_BITS"}
_TYPE_START = {"LIST", "TUPLE", "DICT"}


def _keyword(name: str, lark=None) -> str | None:
    """Lark names the keywords of a grammar after their text (LIST for "List", ...); `lark` is
    the parser whose grammar names them (miltext's own by default)."""
    if lark is None:
        from .parser import _parser
        lark = _parser(False).lark
    try:
        pattern = lark.get_terminal(name).pattern
    except (KeyError, AttributeError):
        return None
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return None


def describe_expected(names, lark=None) -> str:
    names = set(names)
    words = []
    if _VALUE_START & names and "VAR" in names:
        words.append("a value or a %name")
        names -= _VALUE_START | {"VAR", "NAME", "OBJECT_REPR", "LSQB", "LBRACE", "LPAR", "DTYPE"}
    elif _VALUE_START & names:
        words.append("a value")
        names -= _VALUE_START | {"NAME", "OBJECT_REPR", "LSQB", "LBRACE", "DTYPE"}
    elif "DTYPE" in names and ("LPAR" in names or _TYPE_START & names):
        words.append("a type such as (2, 4, fp32)")
        names -= {"DTYPE", "LPAR", "__ANON_0"} | _TYPE_START
    for n in sorted(names):
        word = _TERMINALS.get(n) or _keyword(n, lark)
        if word and word not in words:
            words.append(word)
    if not words:
        return "the text cannot go on like this"
    if len(words) > 6:
        words = words[:6] + ["..."]
    return "expected " + (words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1])


# How a token is named when it is the unexpected one: "unexpected name 'relu'".
_NOUNS = {"VAR": "name", "NAME": "name", "STRING": "string", "SIGNED_INT": "number", "FLOAT": "number", "SPECIAL_FLOAT": "number",
          "NAN_BITS": "number", "NUMBERS": "list", "DTYPE": "dtype", "TENSOR_TYPE": "type",
          "SIMPLE_OP": "op", "B64": "b64 data", "STORAGE": "storage kind"}


def describe_token(tok) -> str:
    text = str(tok)
    if len(text) > 40:
        text = text[:37] + "..."
    word = _TERMINALS.get(tok.type, "")
    if word.startswith("'"):
        return word
    noun = _NOUNS.get(tok.type)
    return f"{noun} {text!r}" if noun else repr(text)
