"""Random programs (hypothesis): proto → text → proto is byte-identical and printing is a fixed
point, for every dtype, kind of value and set-or-unset field."""
from hypothesis import given

import miltext
from miltext.ir import Block, Function, Operation, Program, TensorType, Var
from support.strategies import SETTINGS, programs, value_strategy


def proto_bytes(program):
    return program.to_proto().SerializeToString(deterministic=True)


@SETTINGS
@given(programs)
def test_random_programs_round_trip_through_text(program):
    data = proto_bytes(program)
    text = miltext.dumps(program)
    back = miltext.loads(text)
    assert proto_bytes(back) == data
    assert miltext.dumps(back) == text


@SETTINGS
@given(programs)
def test_random_programs_round_trip_through_proto(program):
    data = proto_bytes(program)
    assert proto_bytes(miltext.Program.from_proto(data)) == data


@SETTINGS
@given(value_strategy)
def test_every_value_survives_as_an_argument_and_an_attribute(value):
    op = Operation("op", inputs={"x": [value], "name": [value]}, attributes={"a": value, "val": value, "name": value},
                   outputs=[Var("y", TensorType("fp32"))])
    program = Program({"main": Function(opset="CoreML7", blocks={"CoreML7": Block(operations=[op])})})
    data = proto_bytes(program)
    text = miltext.dumps(program)
    assert proto_bytes(miltext.loads(text)) == data, text
