"""Serialized programs that are damaged, odd or hostile: each read exactly or refused with a
miltext error, never a wrong value and never protobuf's own exception."""
import pytest

import miltext
from miltext.cli import main
from miltext.proto import schema

TEXT = '''main[CoreML7](%x: (2, fp32)) {
  block0() {
    %w: (2, fp32) = const(val=[1.0, 2.0], name="w")
    %d: (2, fp64) = const(val=fp64([0.5, -3.0]), name="d")
    %y: (2, fp32) = add(x=%x, y=%w, name="y")
  } -> (%y)
}
'''

READERS = {"from_proto": lambda data: miltext.dumps(miltext.Program.from_proto(data)),
           "proto_to_text": miltext.proto_to_text}


def with_unknown_tensor_fields(extra: bytes) -> bytes:
    """The program of TEXT with `extra` (fields FloatTensor/DoubleTensor do not define) appended
    to both tensors' messages, as a newer writer or a damaged file could have them."""
    msg = schema.Program.FromString(miltext.loads(TEXT).to_bytes())
    ops = msg.functions["main"].block_specializations["CoreML7"].operations
    ops[0].attributes["val"].immediateValue.tensor.floats.MergeFromString(extra)
    ops[1].attributes["val"].immediateValue.tensor.doubles.MergeFromString(extra)
    return msg.SerializeToString()


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("extra", [b"\x10\x05", b"\x15\x00\x00\x80\x3f", b"\x1a\x03abc", b"\x10\x05\x20\x07"],
                         ids=["varint", "fixed32", "bytes-odd-size", "two-fields"])
def test_unknown_fields_in_a_tensor_are_not_values(reader, extra, native_enabled):
    """They used to be read as more numbers: [1.0, 2.0] printed as [1.0, 2.0, 2.79e-38]."""
    text = READERS[reader](with_unknown_tensor_fields(extra))
    assert 'const(val=[1.0, 2.0], name="w")' in text
    assert 'const(val=fp64([0.5, -3.0]), name="d")' in text


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("data", [b"\xff", b"\x0a\x05abc", b"\x0a\xff\xff\xff\xff\x0f"], ids=["tag", "short", "huge-length"])
def test_bytes_that_are_no_program_give_a_miltext_error(reader, data, native_enabled):
    with pytest.raises(miltext.ProgramError, match="not a MIL Program protobuf"):
        READERS[reader](data)


def nested_conds(depth: int) -> bytes:
    msg = schema.Program()
    function = msg.functions["main"]
    function.opset = "CoreML7"
    block = function.block_specializations["CoreML7"]
    for _ in range(depth):
        op = block.operations.add()
        op.type = "cond"
        block = op.blocks.add()
    return msg.SerializeToString()


@pytest.mark.parametrize("reader", sorted(READERS))
def test_a_program_deeper_than_protobuf_reads_is_refused_naming_the_limit(reader, native_enabled):
    """64 nested conds: valid protobuf that protobuf's own decoder will not read (100 levels)."""
    with pytest.raises(miltext.ProgramError, match="nested deeper than protobuf reads .100 message levels"):
        READERS[reader](nested_conds(64))


def test_a_program_within_the_limit_reads():
    assert miltext.proto_to_text(nested_conds(40)).count("cond(") == 40


@pytest.mark.parametrize("data", [b"\xff\x00\x01", nested_conds(64)], ids=["corrupt", "deep"])
@pytest.mark.parametrize("command", ["print", "check", "textconv"])
def test_the_command_line_names_the_file(tmp_path, capsys, data, command):
    path = tmp_path / "bad.pb"
    path.write_bytes(data)
    status = main([command, str(path)])
    out = capsys.readouterr()
    err = out.out + out.err  # check reports on stdout
    if command == "textconv":  # git's textconv never fails: it shows the reason instead
        assert status == 0
    else:
        assert status == 1
        assert str(path) in err
    assert "internal error" not in err and "DecodeError" not in err


def test_check_of_a_program_without_functions_in_bytes_that_are_not_utf8(tmp_path, capsys):
    """A valid Program (version 255, no function) whose bytes are no text: check used to read
    the file again as text and fail inside."""
    path = tmp_path / "empty.bin"
    path.write_bytes(b"\x08\xff\x01")
    assert main(["check", str(path)]) == 0
    assert "internal error" not in capsys.readouterr().err


@pytest.mark.parametrize("code", [-5, -2147483648, 99])
def test_a_dtype_code_no_release_defines_round_trips(code, native_enabled):
    """DataType is an open enum: a negative or unknown code is printed `dtypeN` and read back."""
    msg = schema.Program.FromString(miltext.loads(TEXT).to_bytes())
    msg.functions["main"].inputs[0].type.tensorType.dataType = code
    data = msg.SerializeToString(deterministic=True)
    text = miltext.proto_to_text(data)
    assert f"%x: (2, dtype{code})" in text
    program = miltext.loads(text)
    assert program.to_bytes() == data
    assert program.to_proto().SerializeToString(deterministic=True) == data


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("shape", ["3, 0", "65, 0", "1000000000000, 0", "9, 1000000000, 0, 7"])
def test_an_empty_tensor_with_huge_outer_sizes_prints_in_a_few_bytes(reader, shape, native_enabled):
    """A few bytes of protobuf: a (10**12, 0) tensor nested as `[[], [], ...]` hung the printers
    (a trillion brackets). Past INLINE_LIMIT brackets the literal is a flat `[]` under its type."""
    data = miltext.loads(f'main[CoreML7]() {{\n  block0() {{\n'
                         f'    %w: ({shape}, fp32) = const(val=({shape}, fp32)([]), name="w")\n'
                         f'    %y: ({shape}, fp32) = relu(x=%w, name="y")\n  }} -> (%y)\n}}\n').to_bytes()
    text = READERS[reader](data)
    assert len(text) < 400
    assert miltext.loads(text).to_bytes() == data
    assert miltext.proto_to_text(data) == miltext.dumps(miltext.Program.from_proto(data))
