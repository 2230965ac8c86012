"""The grammar's lexer shortcuts (SIMPLE_OPS, NUMBERS, ARG_REF, TENSOR_TYPE, KEY) only make
lexing faster: text that dodges every shortcut must read as exactly the same program."""
import re

import pytest
from hypothesis import HealthCheck, given, settings

import miltext
from support.corpus import case_id, proto_cases
from support.strategies import programs

_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
# A comment and a line break after every opening bracket and around every `=`: legal between
# any two tokens, and no shortcut's pattern allows either.
_BREAK = re.compile(r"(?<!nan)\(|\[|=")


def _break(m: re.Match) -> str:
    return (" #\n=" if m.group() == "=" else m.group()) + " #\n"


def dodge_shortcuts(text: str) -> str:
    out, last = [], 0
    for m in _STRING.finditer(text):
        out.append(_BREAK.sub(_break, text[last:m.start()]))
        out.append(m.group())
        last = m.end()
    out.append(_BREAK.sub(_break, text[last:]))
    return "".join(out)


def proto_bytes(program):
    return program.to_proto().SerializeToString(deterministic=True)


def test_dodging_really_avoids_the_shortcuts():
    text = ('main[CoreML7](%x: (2, fp32)) {\n  block0() {\n'
            '    %y: (2, fp32) = add(x=%x, y=[1.0, 2.0], name="y")\n  } -> (%y)\n}\n')
    from miltext.text.mil.parser import _parser
    lark = _parser(False).lark
    assert "SIMPLE_OPS" in {t.type for t in lark.lex(text)}
    dodged = {t.type for t in lark.lex(dodge_shortcuts(text))}
    assert not dodged & {"SIMPLE_OPS", "NUMBERS", "ARG_REF", "TENSOR_TYPE", "KEY"}


@pytest.mark.parametrize("path", proto_cases(), ids=case_id)
def test_corpus_reads_the_same_without_shortcuts(path):
    with open(path, "rb") as f:
        text = miltext.dumps(miltext.Program.from_proto(f.read()))
    assert proto_bytes(miltext.loads(dodge_shortcuts(text))) == proto_bytes(miltext.loads(text))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_random_programs_read_the_same_without_shortcuts(program):
    text = miltext.dumps(program)
    assert proto_bytes(miltext.loads(dodge_shortcuts(text))) == proto_bytes(program)


@pytest.mark.parametrize("argument", [
    "y=(2, fp16)(blob(64))",        # a weight in the weight file, as every converted model has
    "y=(2, fp16)(blob)",            # the same, at the offset the weight file's layout implies
    "y=fp16([1.0, 2.0])",           # a literal of another dtype than its default
    "y=uint8(3)",
    "values=(%x, %x)",              # a group of references (concat, stack)
])
def test_the_lines_converted_models_are_made_of_take_the_shortcut(argument):
    text = ('main[CoreML7](%x: (2, fp16)) {\n  block0() {\n'
            f'    %y: (2, fp16) = f(x=%x, {argument}, name="y")\n  }} -> (%y)\n}}\n')
    from miltext.text.mil.parser import _parser
    assert "SIMPLE_OPS" in {t.type for t in _parser(False).lark.lex(text)}
    assert proto_bytes(miltext.loads(text)) == proto_bytes(miltext.loads(dodge_shortcuts(text)))


@pytest.mark.parametrize("between", ["\n      ", "  # a comment\n      ", "  # one\n  # two\n\n  "])
def test_attributes_on_the_next_line_are_not_cut_off_by_the_plain_line_shortcut(between):
    line = '    %w: (8, fp32) = constexpr_affine_dequantize(name="w")'
    attributes = "[axis=0, quantized_data=(8, uint8)(blob(64)), scale=0.5, zero_point=uint8(1)]"
    text = f"main(%x: (2, fp32)) {{\n  block0() {{\n{line}{between}{attributes}\n  }} -> (%w)\n}}\n"
    (op,) = miltext.loads(text).functions["main"].block.operations
    assert sorted(op.attributes) == ["axis", "name", "quantized_data", "scale", "zero_point"]
