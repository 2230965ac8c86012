"""Malformed MIL text: every mistake is a ParseError that points at the right line and column,
renders as `file:line:col: error: message`, the source line and a caret, and speaks the user's
language (never the parser generator's). Several independent mistakes are reported together.
Programs that parse but cannot become a proto (undefined names, elided values) raise
ProgramError from `to_proto`."""
import os
from dataclasses import dataclass

import pytest

import miltext
from support.corpus import CORPUS

FILENAME = "model.mil"

# What a message must never show: the parser generator's names for things, or a traceback.
LARK_INTERNALS = ("__ANON", "Token(", "RPAR", "LPAR", "RSQB", "LSQB", "COMMA", "$END", "Traceback")


def in_block(*op_lines: str) -> str:
    """A one-function program whose block holds `op_lines`: the first op is on line 3 and
    starts at column 5 (after four spaces)."""
    ops = "".join(f"    {line}\n" for line in op_lines)
    return "main[CoreML7](%x: (2, fp32)) {\n  block0() {\n" + ops + "  } -> (%x)\n}\n"


VALID_FUNCTION = """main[CoreML7](%x: (2, fp32)) {
  block0() {
    %y: (2, fp32) = relu(x=%x, name="y")
  } -> (%y)
}
"""


@dataclass
class Case:
    id: str
    text: str
    line: int
    column: int
    mentions: tuple = ()  # words the message must contain (the culprit, in the user's terms)


CASES = [
    # ---- brackets and structure ----
    Case("missing-close-paren",  # told at the `(`, not at the `}` where the parser notices
         in_block('%y: (2, fp32) = relu(x=%x, name="y"'), 3, 25, ("'('", "never closed")),
    Case("missing-close-brace-of-block",
         VALID_FUNCTION.replace("  } -> (%y)", "  -> (%y)"), 4, 3),
    Case("missing-close-brace-of-function",  # the end of the text: just past the last line
         VALID_FUNCTION[:-len("}\n")], 4, 12),
    Case("missing-close-bracket-of-opset",
         VALID_FUNCTION.replace("[CoreML7]", "[CoreML7"), 1, 5, ("'['", "never closed")),
    Case("missing-close-paren-of-function-inputs",
         VALID_FUNCTION.replace("(2, fp32)) {", "(2, fp32) {", 1), 1, 14, ("'('", "never closed")),
    Case("missing-arrow-after-block",
         VALID_FUNCTION.replace("} -> (%y)", "} (%y)"), 4, 5),
    Case("extra-close-brace-at-end",
         VALID_FUNCTION + "}\n", 6, 1),
    Case("missing-equals-before-op",
         in_block('%y: (2, fp32) relu(x=%x, name="y")'), 3, 19),
    Case("end-of-text-after-function-open-paren",
         "main[CoreML7](", 1, 15),
    Case("op-outside-any-block",
         '%y: (2, fp32) = relu(x=%x, name="y")\n' + VALID_FUNCTION, 1, 1),
    Case("nested-block-with-no-op-before-it",
         "main[CoreML7](%x: (2, fp32)) {\n"
         "  block0() {\n"
         "    block1() {\n"
         "    } -> (%x)\n"
         "  } -> (%x)\n"
         "}\n", 3, 5),
    Case("opset-on-a-nested-block",
         "main[CoreML7](%x: (2, fp32), %p: (bool)) {\n"
         "  block0() {\n"
         '    %c: (2, fp32) = cond(pred=%p, name="c")\n'
         "      block1[CoreML7]() {\n"
         "      } -> (%x)\n"
         "      block2() {\n"
         "      } -> (%x)\n"
         "  } -> (%c)\n"
         "}\n", 4, 7),
    Case("function-defined-twice",
         VALID_FUNCTION + "\n" + VALID_FUNCTION, 7, 1, ("main",)),
    Case("two-blocks-for-the-same-opset",
         "main[CoreML7](%x: (2, fp32)) {\n"
         "  block0() {\n"
         "  } -> (%x)\n"
         "  block1() {\n"
         "  } -> (%x)\n"
         "}\n", 4, 3, ("CoreML7",)),
    Case("header-version-not-an-integer",
         "program(version=x)\n\n" + VALID_FUNCTION, 1, 17),
    Case("input-given-twice",  # the second x
         in_block('%y: (2, fp32) = relu(x=%x, x=%x, name="y")'), 3, 32, ("x",)),
    Case("attribute-given-twice",  # the second a
         in_block('%y: (2, fp32) = relu(x=%x, name="y")[a=1, a=2]'), 3, 47, ("a",)),

    # ---- characters that cannot start a token ----
    Case("stray-dollar",
         in_block('%y: (2, fp32) = relu(x=$x, name="y")'), 3, 28),
    Case("percent-with-no-name",
         in_block('%y: (2, fp32) = relu(x=%, name="y")'), 3, 28),

    # ---- types ----
    Case("unknown-dtype-in-a-function-input",  # at fp33, which is what is wrong
         VALID_FUNCTION.replace("%x: (2, fp32)", "%x: (2, fp33)", 1), 1, 23, ("fp33",)),
    Case("unknown-dtype-in-an-op-output",
         in_block('%y: (2, fp33) = relu(x=%x, name="y")'), 3, 13, ("fp33",)),
    Case("unknown-dtype-called-on-a-value",
         in_block('%y: (2, fp32) = relu(x=%x, v=fp33([1.0]), name="y")'), 3, 34, ("fp33",)),
    Case("negative-dimension",  # at -2
         VALID_FUNCTION.replace("%x: (2, fp32)", "%x: (-2, fp32)", 1), 1, 20, ("-2",)),
    Case("dtype-not-last-in-a-type",  # the whole type is in the wrong order
         VALID_FUNCTION.replace("%x: (2, fp32)", "%x: (fp32, 2)", 1), 1, 19),

    # ---- strings ----
    Case("unknown-escape-in-a-string",  # at the backslash
         in_block(r'%y: (2, fp32) = relu(x=%x, name="a\qb")'), 3, 39, (r"\q",)),
    Case("unknown-escape-in-a-var-name",  # at the backslash
         in_block(r'%"a\qb": (2, fp32) = relu(x=%x, name="y")'), 3, 8, (r"\q",)),
    Case("unterminated-string",  # at the opening quote
         in_block('%y: (2, fp32) = relu(x=%x, name="y)'), 3, 37, ("string",)),

    # ---- values ----
    Case("python-object-repr-from-a-coremltools-print",
         in_block('%y: (2, fp32) = classify(x=%x, classes=<coremltools.converters.mil.mil.operation.'
                  'mil_list object at 0x7f03d4666590>, name="y")'), 3, 44, ("object at 0x",)),
    Case("ragged-number-list",  # raggedness is the whole literal's: at its `[`
         in_block('%y: (2, fp32) = relu(x=%x, v=[[1, 2], [3]], name="y")'), 3, 34),
    Case("ragged-string-list",
         in_block('%y: (2, fp32) = relu(x=%x, v=[["a", "b"], ["c"]], name="y")'), 3, 34),
    Case("number-with-two-points-in-a-list",  # not 1.2 and .3: the list is malformed
         in_block('%y: (2, fp32) = relu(x=%x, v=[1.2.3, ], name="y")'), 3, 34, ("malformed",)),
    Case("number-outside-the-inner-list",
         in_block('%y: (2, fp32) = relu(x=%x, v=[[] 2.0], name="y")'), 3, 38, ("2.0",)),
    Case("unbalanced-close-bracket-in-a-list",  # at the extra `]`
         in_block('%y: (2, fp32) = relu(x=%x, v=[1, 2]], name="y")'), 3, 40),
    Case("int-out-of-range-for-int8",  # at 300
         in_block('%y: (2, fp32) = relu(x=%x, v=int8([300]), name="y")'), 3, 40, ("300", "int8")),
    Case("mixed-element-kinds-in-a-list",
         in_block('%y: (2, fp32) = relu(x=%x, v=[1, 2.5, "a"], name="y")'), 3, 34),
    Case("word-where-a-number-belongs-in-typed-data",  # at the word
         in_block('%y: (2, fp32) = relu(x=%x, v=(fp32)(synthetic), name="y")'), 3, 41, ("synthetic",)),
    Case("invalid-base64",
         in_block('%y: (2, fp32) = relu(x=%x, v=(3, uint8)(b64"AAA"), name="y")'), 3, 45),
    Case("negative-blob-offset",  # at -1
         in_block('%y: (2, fp32) = relu(x=%x, v=(4, fp16)(blob(-1)), name="y")'), 3, 49),
    Case("unknown-function-in-a-value",
         in_block('%y: (2, fp32) = relu(x=%x, v=foo(1), name="y")'), 3, 34, ("foo",)),

    # ---- columns count characters, on the line the error is on ----
    Case("tab-indented-line",  # column 28 counts the tab as one character
         in_block('%a: (2, fp32) = relu(x=%x, name="a")').replace("    %a", "\t%a")
         .replace('name="a")\n', 'name="a")\n\t%y: (2, fp32) = relu(x=$x, name="y")\n'), 4, 25),
    Case("non-ascii-before-the-error",
         in_block('%y: (2, fp32) = relu(x=%x, name="é✓ü", v=$)'), 3, 46),
    Case("crlf-line-endings",
         in_block('%y: (2, fp32) = relu(x=$x, name="y")').replace("\n", "\r\n"), 3, 28),
    Case("form-feed-on-an-earlier-line",  # \f is whitespace; it does not start a line
         in_block('%y: (2, fp32) = relu(x=$x, name="y")').replace("{\n", "{\f\n", 1), 3, 28),
]


def parse_error(text: str, filename: str | None = FILENAME) -> miltext.ParseError:
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text, filename)
    return info.value


def source_line(text: str, line: int) -> str:
    """Line `line` as the parser counts lines (at "\\n" only), without its line ending."""
    return text.split("\n")[line - 1].rstrip("\r")


def caret_under(source: str, column: int) -> str:
    """A caret under `column`, tabs kept so it lines up in a terminal."""
    return "".join("\t" if c == "\t" else " " for c in source[:column - 1]) + "^"


def assert_no_parser_internals(error: miltext.ParseError):
    for word in LARK_INTERNALS:
        assert word not in str(error), f"{word!r} in {str(error)!r}"
        for _, _, message in error.errors:
            assert word not in message, f"{word!r} in {message!r}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_malformed_text_points_at_the_mistake(case):
    """The error is found, and at the place a user would look for it."""
    e = parse_error(case.text)
    assert (e.line, e.column) == (case.line, case.column), e.message
    for word in case.mentions:
        assert word in e.message, f"the message should name {word!r}: {e.message!r}"


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_error_renders_as_file_line_col_source_and_caret(case):
    """str(e) is `file:line:col: error: message`, the offending source line, a caret under the
    column; the errors list starts with this error; nothing of the parser generator shows."""
    e = parse_error(case.text)
    head, shown, caret = str(e).split("\n")
    assert head == f"{FILENAME}:{e.line}:{e.column}: error: {e.message}"
    assert shown == source_line(case.text, e.line)
    assert caret == caret_under(shown, e.column)
    assert e.filename == FILENAME
    assert e.errors[0] == (e.line, e.column, e.message)
    assert_no_parser_internals(e)


def test_error_without_a_filename_says_input():
    e = parse_error(in_block('%y: (2, fp32) = relu(x=$x, name="y")'), filename=None)
    assert str(e).startswith("<input>:3:28: error: ")


def test_parse_error_is_a_value_error():
    """Callers that catch ValueError for bad input catch ParseError too."""
    assert isinstance(parse_error("main[CoreML7]("), ValueError)


def test_messages_read_as_english():
    """`unexpected name 'relu'`, not `unexpected a name 'relu'`."""
    e = parse_error(in_block('%y: (2, fp32) relu(x=%x, name="y")'))
    assert "relu" in e.message
    assert "unexpected a " not in e.message and "unexpected an " not in e.message, e.message


# ---- several errors in one text ----

def test_independent_errors_in_one_block_are_all_reported_in_line_order():
    text = in_block(
        '%a: (2, fp32) = relu(x=%x, name="a")',
        '%b: (2, fp32) = relu(x=$x, name="b")',          # line 4
        '%c: (2, fp32) = relu(x=%x, name="c")',
        '%d: (2, fp32) = relu(x=%, name="d")',           # line 6
        '%e: (2, fp32) = relu(x=%x, name="e")',
        '%f: (2, fp32) = classify(x=%x, classes=<a.mil_list object at 0x7f03d4666590>, name="f")',  # line 8
    )
    e = parse_error(text)
    assert [(line, column) for line, column, _ in e.errors] == [(4, 28), (6, 28), (8, 44)]
    assert (e.line, e.column) == (4, 28)
    for _, _, message in e.errors:
        assert all(word not in message for word in LARK_INTERNALS), message


def test_errors_in_different_functions_are_all_reported():
    second = VALID_FUNCTION.replace("main", "other").replace("relu(x=%x", "relu(x=%")
    first = VALID_FUNCTION.replace("relu(x=%x", "relu(x=$x")
    e = parse_error(first + "\n" + second)
    assert [(line, column) for line, column, _ in e.errors] == [(3, 28), (9, 28)]


def test_errors_are_sorted_even_when_found_out_of_order():
    """The stray `$` on line 5 is met first; the second block for CoreML7 (line 4) only when
    the function is complete. The list, and the error shown, go in text order."""
    text = ("main[CoreML7](%x: (2, fp32)) {\n"
            "  block0() {\n"
            "  } -> (%x)\n"
            "  block1() {\n"
            '    %y: (2, fp32) = relu(x=$x, name="y")\n'
            "  } -> (%x)\n"
            "}\n")
    e = parse_error(text)
    assert [(line, column) for line, column, _ in e.errors] == [(4, 3), (5, 28)]
    assert (e.line, e.column) == (4, 3) and "CoreML7" in e.message


# ---- programs that parse but cannot be built ----

def read(*parts) -> str:
    with open(os.path.join(CORPUS, *parts), encoding="utf-8") as f:
        return f.read()


def test_strict_build_of_a_print_with_dangling_names_names_the_undefined_var():
    """coremltools' print leaves out const ops: building it strictly must say which name is
    undefined and where it is used (torch_mlp.pymil.txt uses it on line 4)."""
    program = miltext.loads(read("coremltools", "torch_mlp.pymil.txt"), "torch_mlp.pymil.txt")
    with pytest.raises(miltext.ProgramError) as info:
        program.to_proto(strict=True)
    assert "var_0_weight_to_fp16" in str(info.value)
    assert info.value.loc is not None and info.value.loc[0] == 4


def test_lenient_build_of_a_print_with_dangling_names_works():
    program = miltext.loads(read("coremltools", "torch_mlp.pymil.txt"))
    message = program.to_proto()
    ops = message.functions["main"].block_specializations["CoreML7"].operations
    assert [op.type for op in ops] == ["linear", "relu", "linear", "tanh", "linear", "softmax"]
    assert ops[0].inputs["weight"].arguments[0].name == "var_0_weight_to_fp16"


@pytest.mark.parametrize("name", ["cond_basic", "torch_mlp", "loop_and_value_bindings"])
def test_strict_build_of_a_complete_program_works(name):
    """Strictness rejects only what is wrong: canonical text of a real program builds."""
    folder = "edge" if name == "loop_and_value_bindings" else "coremltools"
    with open(os.path.join(CORPUS, folder, name + ".pb"), "rb") as f:
        data = f.read()
    text = miltext.dumps(miltext.Program.from_proto(data))
    assert miltext.loads(text).to_proto(strict=True).SerializeToString(deterministic=True) == data


ELIDED = """main[CoreML7](%x: (4, 2, fp32)) {
  block0() {
    %c: (4, 2, fp32)* = const(val=[...], name="c")
    %y: (4, 2, fp32) = add(x=%x, y=%c, name="y")
  } -> (%y)
}
"""


@pytest.mark.parametrize("strict", [False, True])
def test_elided_value_cannot_be_built(strict):
    """Older coremltools prints write `val=[...]`: it reads, but there is no value to build."""
    program = miltext.loads(ELIDED)
    with pytest.raises(miltext.ProgramError) as info:
        program.to_proto(strict=strict)
    assert "[...]" in str(info.value)
    assert info.value.loc is not None and info.value.loc[0] == 3
