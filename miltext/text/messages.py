"""Parser expectations in a user's words: never a grammar's terminal name."""
from __future__ import annotations

# What each named terminal of grammar/mil.lark and grammar/modelmil.lark stands for.
_TERMINALS = {
    "VAR": "a %name", "NAME": "a name", "STRING": "a string", "SIGNED_INT": "an integer",
    "FLOAT": "a number", "SPECIAL_FLOAT": "a number", "NAN_BITS": "a number", "NUMBERS": "a value",
    "DTYPE": "a dtype such as fp32", "TRUE": "True", "FALSE": "False", "B64": 'b64"..." data',
    "STORAGE": "a storage kind such as floats:", "OBJECT_REPR": "a value",
    "SYM_OP": "an operator", "SYM_CALL": "a dimension", "SYM_NEGATED": "a dimension", "LPAR": "'('", "LSQB": "'['", "LBRACE": "'{'", "RPAR": "')'",
    "RSQB": "']'", "RBRACE": "'}'", "COMMA": "','", "COLON": "':'", "EQUAL": "'='",
    "STAR": "'*'", "QMARK": "'?'", "CIRCUMFLEX": "'^'", "$END": "the end of the text",
    "SIMPLE_OPS": "an op", "KEY": "an argument such as x=%x", "ARG_REF": "an argument such as x=%x",
    "TENSOR_TYPE": "a type such as (2, fp32)", "_SCOPES": "'['",
    # grammar/modelmil.lark (its parser puts every token that starts a type under MODELMIL_TYPE,
    # and calls a NAME where a value may be a MODELMIL_REF: a var, which has no % there)
    "MODELMIL_REF": "a name", "VERSION": "a version such as 1.0", "MODELMIL_TYPE": "a type such as tensor<fp32, [2]>",
    "SCALAR_VALUE": "a value such as int32(1)",
}
# Sets of terminals that one phrase says better than their words one by one: when `when` is
# among the expected terminals, `phrase` stands for all of `covers` that are.
_FAMILIES = (
    ({"SIMPLE_OPS"}, "an op", {"SIMPLE_OPS", "VAR", "NAME", "STRING"}),
    ({"KEY", "ARG_REF"}, "an argument such as x=%x", {"KEY", "ARG_REF", "NAME", "STRING"}),
)
# Terminals that only a value starts (a string may also be a name).
_VALUE_START = {"FLOAT", "SIGNED_INT", "TRUE", "FALSE", "B64", "SPECIAL_FLOAT", "NAN_BITS", "NUMBERS",
                "SCALAR_VALUE"}
_VALUE_ALSO = {"STRING", "NAME", "OBJECT_REPR", "LSQB", "LBRACE", "DTYPE", "LPAR", "TENSOR_TYPE", "MODELMIL_TYPE"}
_TYPE_START = {"LIST", "TUPLE", "DICT"}


def _keyword(name: str, lark) -> str | None:
    """Lark names the keywords of a grammar after their text (LIST for "List", ...); `lark` is
    the parser whose grammar names them."""
    try:
        pattern = lark.get_terminal(name).pattern
    except (KeyError, AttributeError):
        return None
    if pattern.type == "str":
        return f"'{pattern.value}'"
    return None


def describe_expected(names, lark) -> str:
    """The terminals `names` that the parser `lark` expected, in words."""
    names = set(names)
    if {"QMARK", "DTYPE"} <= names:  # inside a parenthesized list: a type, a tuple or bindings
        return "expected a dimension, a dtype, a value or a %name"
    words = []
    for when, phrase, covers in _FAMILIES:
        if when & names:
            words.append(phrase)
            names -= covers
    if _VALUE_START & names and "VAR" in names:
        words.append("a value or a %name")
        names -= _VALUE_START | _VALUE_ALSO | {"VAR"}
    elif _VALUE_START & names and "MODELMIL_REF" in names:
        words.append("a value or a name")
        names -= _VALUE_START | _VALUE_ALSO | {"MODELMIL_REF"}
    elif _VALUE_START & names:
        words.append("a value")
        names -= _VALUE_START | _VALUE_ALSO
    elif "DTYPE" in names and ("LPAR" in names or _TYPE_START & names):
        words.append("a type such as (2, 4, fp32)")
        names -= {"DTYPE", "LPAR", "TENSOR_TYPE"} | _TYPE_START
    if "NAME" in names:
        names.discard("STRING")  # a name may be quoted: a name is the word for both
    for n in sorted(names):
        word = _TERMINALS.get(n) or _keyword(n, lark)
        if word and word not in words:
            words.append(word)
    if not words:
        return "it does not belong here"
    if len(words) > 6:
        words = words[:6] + ["..."]
    return "expected " + (words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1])


# How a token is named when it is the unexpected one: "unexpected name 'relu'".
_NOUNS = {"VAR": "name", "NAME": "name", "STRING": "string", "SIGNED_INT": "number", "FLOAT": "number", "SPECIAL_FLOAT": "number",
          "NAN_BITS": "number", "NUMBERS": "list", "DTYPE": "dtype", "TENSOR_TYPE": "type",
          "SIMPLE_OP": "op", "B64": "b64 data", "STORAGE": "storage kind"}
# Tokens that hold a whole line or more (the lexer's shortcuts): shown by their first word.
_LONG = {"SIMPLE_OPS": "op", "ARG_REF": "argument", "KEY": "argument", "SCALAR_VALUE": "value"}


def describe_token(tok) -> str:
    text = str(tok)
    long = _LONG.get(tok.type)
    if long:
        return f"{long} {text.split(':')[0].split('=')[0].split()[0]!r}"
    if len(text) > 40:
        text = text[:37] + "..."
    word = _TERMINALS.get(tok.type, "")
    if word.startswith("'"):
        return word
    noun = _NOUNS.get(tok.type)
    return f"{noun} {text!r}" if noun else repr(text)
