"""Parse errors a person can act on, in every dialect (issue 14.5, issue 13.5):

- a `(`, `[` or `{` that is never closed is one error, at the delimiter, however many lines
  follow it (the parser only notices lines later, where each line would look wrong);
- a truncated text has one error, at its end (not at the `{` of the block it stops in);
- after an error, reading goes on at the next op line: one typo, one error;
- no message shows the parser generator's names for things.

Each case asserts every error of the run: (line, column, message).
"""
import os
import re

import pytest

import miltext
from support.corpus import CORPUS


def in_block(*op_lines: str) -> str:
    """A one-function program whose block holds `op_lines`, the first on line 3 at column 5."""
    ops = "".join(f"    {line}\n" for line in op_lines)
    return "main[CoreML7](%x: (2, fp32)) {\n  block0() {\n" + ops + "  } -> (%x)\n}\n"


def truncated(text: str, before: str, keep: int = 0) -> str:
    """`text` cut just before `before` (keeping `keep` characters of it)."""
    return text[:text.index(before) + keep]


OK1 = '%a: (2, fp32) = relu(x=%x, name="a")'
OK2 = '%b: (2, fp32) = relu(x=%a, name="b")'
OK3 = '%c: (2, fp32) = relu(x=%b, name="c")'
NEVER = "opened here is never closed"
TYPO_ARG = "unexpected argument 'name': expected ',' or ')'"


def _read(name: str) -> str:
    with open(os.path.join(CORPUS, name), encoding="utf-8") as f:
        return f.read()


MODEL_MIL = _read("wild/21_mlmodelc-export_pipeline-masked-int32-model0.mil")
PRINT = _read("wild/44_coremltools_docs_guides_mil_print_with_consts.pymil.txt")


CASES = {
    # ---- a delimiter never closed: once, at the delimiter ----
    "paren-of-op-call": (in_block('%a: (2, fp32) = relu(x=%x, name="a"', OK2, OK3), [(3, 25, f"'(' {NEVER}")]),
    "paren-of-last-op": (in_block(OK1, OK2, '%c: (2, fp32) = relu(x=%b, name="c"'), [(5, 25, f"'(' {NEVER}")]),
    "paren-of-type": (in_block('%a: (2, fp32 = relu(x=%x, name="a")', OK2, OK3), [(3, 9, f"'(' {NEVER}")]),
    "bracket-of-list": (in_block('%a: (2, fp32) = add(x=%x, y=[1.0, 2.0, name="a")', OK2, OK3),
                        [(3, 33, f"'[' {NEVER}")]),
    "inner-bracket-of-nested-list": (
        in_block('%a: (2, 2, fp32) = add(x=%x, y=[[1.0, 2.0], [3.0, 4.0], name="a")', OK2),
        [(3, 36, f"'[' {NEVER}")]),
    "brace-of-dict": (in_block('%a: (2, fp32) = f(x=%x, d={"k": 1, name="a")', OK2, OK3), [(3, 31, f"'{{' {NEVER}")]),
    "bracket-of-opset": ("main[CoreML7(%x: (2, fp32)) {\n  block0() {\n    " + OK1 + "\n  } -> (%a)\n}\n",
                         [(1, 5, f"'[' {NEVER}")]),
    "paren-of-function-inputs": ("main[CoreML7](%x: (2, fp32) {\n  block0() {\n    " + OK1 + "\n  } -> (%a)\n}\n",
                                 [(1, 14, f"'(' {NEVER}")]),
    "two-never-closed": (in_block('%a: (2, fp32) = relu(x=%x, name="a"', OK2,
                                  '%c: (2, fp32) = add(x=%b, y=[1.0, 2.0, name="c")'),
                         [(3, 25, f"'(' {NEVER}"), (5, 33, f"'[' {NEVER}")]),
    "typo-then-never-closed": (in_block('%a: (2, fp32) = relu(x=%x name="a")', OK2, '%c: (2, fp32) = relu(x=%b, name="c"'),
                               [(3, 31, TYPO_ARG), (5, 25, f"'(' {NEVER}")]),
    "brackets-in-strings-and-comments-do-not-count": (
        in_block('%a: (2, fp32) = relu(x=%x, name="a(b[c{")  # f(x [', '%b: (2, fp32) = relu(x=%a name="b")'),
        [(4, 31, TYPO_ARG)]),
    "a-closer-too-many": (in_block('%a: (2, fp32) = relu(x=%x, name="a"))', OK2),
                          [(3, 41, "unexpected ')': expected an op or '}'")]),
    # ---- one typo, one error; reading goes on at the next op line ----
    "three-typos-three-errors": (
        in_block('%a: (2, fp32) = relu(x=%x name="a")', '%b: (2, fp32) relu(x=%a, name="b")',
                 '%c: (2, fp32) = relu(x=%b,, name="c")'),
        [(3, 31, TYPO_ARG), (4, 19, "unexpected name 'relu': expected ',', '=' or ')'"),
         (5, 31, "unexpected ',': expected an argument such as x=%x")]),
    "unterminated-string": (in_block('%a: (2, fp32) = relu(x=%x, name="a)', OK2),
                            [(3, 37, "unterminated string: a string ends with its quote on the same line")]),
    # ---- a truncated text: once, at its end ----
    "truncated-inside-an-op": (truncated(in_block(OK1, OK2), 'name="b"'),
                               [(4, 31, "unexpected end of text: expected an argument such as x=%x")]),
    "truncated-after-an-op-line": (truncated(in_block(OK1, OK2), "  } ->"),
                                   [(4, 41, "unexpected end of text: expected an op or '}'")]),
    "truncated-inside-a-string": (truncated(in_block(OK1), '"a"', 2),
                                  [(3, 39, "unexpected end of text: the string opened at 3:37 is never closed")]),
    "truncated-inside-the-inputs": ("main[CoreML7](%x: (2, ",
                                    [(1, 22, "unexpected end of text: expected a dimension, a dtype, a value or a %name")]),
    "truncated-after-the-block": (in_block(OK1)[:-2],
                                  [(4, 12, "unexpected end of text: expected an op or '}'")]),
    # ---- a line or a block that stops short ----
    "op-line-ends-after-its-equals": (in_block('%a: (2, fp32) =', OK2),
                                      [(3, 20, "the line ends too soon: expected a name")]),
    "block-end-without-its-brace": (in_block(OK1).replace("  } -> (%x)", "  -> (%x)") + in_block(OK1).replace("main", "second"),
                                    [(4, 3, "unexpected '->': expected an op or '}'")]),
    "function-without-its-brace-before-another": (
        in_block(OK1)[:-2] + in_block(OK1).replace("main", "second"),
        [(9, 2, "unexpected end of text: expected '->' (the '{' at 1:30 is never closed)")]),
    "block-header-without-its-brace": ("main[CoreML7](%x: (2, fp32)) {\n  block0() x\n    " + OK1 + "\n  } -> (%a)\n}\n",
                                       [(2, 12, "unexpected name 'x': expected '{' or '['")]),
    # ---- coremltools' print ----
    "print-paren-of-op-call": (PRINT.replace('relu(x=%x, name="relu")', 'relu(x=%x, name="relu"'),
                               [(3, 49, f"'(' {NEVER}")]),
    "print-paren-of-type": (PRINT.replace("%reduce: (1, 3, fp32)(Tensor)", "%reduce: (1, 3, fp32(Tensor)"),
                            [(8, 14, f"'(' {NEVER}")]),
    "print-typo": (PRINT.replace("transpose(x=%relu, perm", "transpose(x=%relu perm"),
                   [(5, 68, "unexpected argument 'perm': expected ',' or ')'")]),
    "print-quote-in-a-type": (PRINT.replace("%relu: (1, 100, 100, 3, fp32)", '%relu: (1, ", 100, 3, fp32)'),
                              [(3, 66, "the line ends too soon: expected '^', ',', '=', '(', '[', a name or ...")]),
    "print-truncated": (truncated(PRINT, "    %reduce:"),
                        [(7, 87, "unexpected end of text: expected an op, '[' or '}'")]),
    # ---- Apple's model.mil ----
    "modelmil-paren-of-op-call": (MODEL_MIL.replace("y = threshold)", "y = threshold"), [(6, 50, f"'(' {NEVER}")]),
    "modelmil-bracket-of-attributes": (MODEL_MIL.replace("[val = fp32(0x0p+0)]", "[val = fp32(0x0p+0)"),
                                       [(5, 37, f"'[' {NEVER}")]),
    "modelmil-bracket-of-shape": (MODEL_MIL.replace("tensor<bool, [4]> mask_bool", "tensor<bool, [4> mask_bool"),
                                  [(6, 26, f"'[' {NEVER}")]),
    "modelmil-two-typos": (MODEL_MIL.replace("input, y = threshold", "input y = threshold")
                           .replace('string("fp16"), x', 'string("fp16") x'),
                           [(6, 61, "unexpected name 'y': expected ',' or ')'"),
                            (8, 69, "unexpected name 'x': expected ',', ')' or ']'")]),
    "modelmil-op-without-its-semicolon": (MODEL_MIL.replace("y = threshold);", "y = threshold)"),
                                          [(6, 76, "missing ';' at the end of the op: expected '[' or ';'")]),
    "modelmil-function-without-its-end": (MODEL_MIL.replace("        } -> (mask_precision_io, rounded);\n", ""),
                                          [(10, 2, "unexpected end of text: expected '->' (the '{' at 3:1 is never closed)")]),
    "modelmil-function-header-without-its-brace": (MODEL_MIL.replace("input) {", "input)"),
                                                   [(4, 46, "the line ends too soon: expected '{' or '['")]),
    "modelmil-hex-float-without-digits": (MODEL_MIL.replace("fp32(0x0p+0)", "fp32(0xp+0)"),
                                          [(5, 50, "unexpected name 'xp': expected ',', '}', ')' or ']'")]),
    "modelmil-header-without-its-paren": (MODEL_MIL.replace("program(1.3)", "program1.3)"),
                                          [(1, 8, "unexpected number '1.3': expected '('")]),
    "modelmil-truncated-inside-an-op": (truncated(MODEL_MIL, "rounded = cast"),
                                        [(8, 30, "unexpected end of text: expected a name")]),
    "modelmil-truncated-before-its-last-brace": (MODEL_MIL[:-1],
                                                 [(10, 43, "unexpected end of text: expected 'func' or '}'")]),
}

# The parser generator's names for things: terminal names (RPAR, SIMPLE_OPS, __ANON_0), tokens.
_INTERNAL = re.compile(r"__ANON|Token\(|\$END|Traceback|\b(?!BLOBFILE\b)[A-Z]{2,}(_[A-Z]+)*\b")


def _internal(message: str):
    """A parser generator's name in `message`, outside the user's text that it quotes."""
    return _INTERNAL.search(re.sub(r"'[^']*'", "''", message))


@pytest.mark.parametrize("name", list(CASES))
def test_every_error_of_the_run(name):
    text, expected = CASES[name]
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text, "in.mil")
    e = info.value
    assert e.errors == expected
    assert (e.line, e.column, e.message) == expected[0]
    for _line, _column, message in e.errors:
        assert not _internal(message), message


def test_every_error_renders_with_its_line_and_a_caret():
    text, expected = CASES["two-never-closed"]
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text, "in.mil")
    rendered = info.value.render_all().split("\n")
    assert rendered[0] == "in.mil:3:25: error: '(' opened here is never closed"
    assert rendered[1] == '    %a: (2, fp32) = relu(x=%x, name="a"'
    assert rendered[2] == " " * 24 + "^"
    assert rendered[3] == "in.mil:5:33: error: '[' opened here is never closed"


def test_a_closed_multi_line_bracket_is_not_an_error():
    """Brackets that close on a later line (inputs over several lines, a wrapped literal) are
    fine; a mistake inside them is told where it is."""
    text = ("main[CoreML7](%x: (2, fp32),\n              %y: (2, fp32)) {\n  block0() {\n"
            "    %a: (2, fp32) = add(x=%x, y=[1.0,\n                                 2.0], name=\"a\")\n"
            "  } -> (%a)\n}\n")
    assert miltext.loads(text).functions["main"].block.operations[0].type == "add"
    broken = text.replace("2.0], name", "2.0] name")
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(broken)
    assert info.value.errors == [(5, 39, "unexpected argument 'name': expected ':', ',', '}', ')' or ']'")]


@pytest.mark.parametrize("tail", ["\n", "\n\n", "\r\n", "  \n\t\n"])
@pytest.mark.parametrize("path", ["modelmil/04_ios17_decoder_lstm.mil",
                                  "wild/13_mlmodelc-export_flexible-gather.mil"])
def test_a_committed_model_mil_that_ends_with_a_newline_is_the_same_program(path, tail):
    text = _read(path)
    program = miltext.loads(text + tail)
    assert program.to_proto().SerializeToString(deterministic=True) == \
        miltext.loads(text).to_proto().SerializeToString(deterministic=True)
    assert miltext.dumps(program, dialect="modelmil") == text + tail  # it ends as it was read


@pytest.mark.parametrize("path", ["modelmil/04_ios17_decoder_lstm.mil", "wild/53_own_coremlc3500-ios16-palette2bit-state.mil",
                                  "coremltools/torch_mlp.pymil.txt", "wild/44_coremltools_docs_guides_mil_print_with_consts.pymil.txt"])
def test_a_text_cut_anywhere_has_one_error_at_its_end(path):
    """Cut at every line end and in the middle of every line: exactly one error, at the last
    character that is left (or, for an unclosed quote, just after it)."""
    text = _read(path)
    lines = text.split("\n")
    cuts = []
    offset = 0
    for line in lines[:-1]:
        cuts += [offset + len(line) // 2, offset + len(line)]
        offset += len(line) + 1
    for cut in cuts[::max(1, len(cuts) // 60)]:
        part = text[:cut]
        if not part.strip() or part.rstrip() == text.rstrip():
            continue
        with pytest.raises(miltext.ParseError) as info:
            miltext.loads(part, "cut.mil")
        e = info.value
        rest = part.rstrip().split("\n")
        end = (len(rest), len(rest[-1]) + 1)
        assert len(e.errors) == 1, (cut, e.errors)
        assert (e.line, e.column) == end, (cut, e.errors, part[-80:])
        assert e.message.startswith("unexpected end of text"), (cut, e.message)


_STRUCTURE = "()[]{},=:;%\"<>"


@pytest.mark.parametrize("path", ["coremltools/torch_mlp.pymil.txt", "coremltools/cond_basic.pymil.txt",
                                  "modelmil/05_ios17_joint_decision_topk.mil", "wild/13_mlmodelc-export_flexible-gather.mil"])
def test_a_structural_character_left_out_anywhere_is_at_most_one_error(path):
    """Leave out each bracket, comma, equals sign, quote... in turn: the text reads, or it has
    exactly one error, in words (one mistake, one error)."""
    text = _read(path)
    places = [i for i, c in enumerate(text) if c in _STRUCTURE]
    for i in places[::max(1, len(places) // 150)]:
        broken = text[:i] + text[i + 1:]
        try:
            miltext.loads(broken, "in.mil")
        except miltext.ParseError as e:
            assert len(e.errors) == 1, (i, text[max(0, i - 30):i + 10], e.errors)
            assert not _internal(e.message), e.message
