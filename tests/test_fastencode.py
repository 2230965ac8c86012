"""The C fast path (miltext.proto._fastencode): object model → serialized Program, byte-identical to
encode.py's `program_to_proto(program).SerializeToString(deterministic=True)` whenever it answers,
None otherwise, and never a crash on any object graph."""
import copy
import glob
import os
import sys

import numpy as np
import pytest
from hypothesis import given

from miltext.errors import ProgramError
from miltext.ir import (
    MISSING,
    UNSET_DIM,
    VARIADIC,
    Blob,
    Block,
    DictData,
    DictType,
    Elided,
    EmptyImmediate,
    Function,
    ListData,
    ListType,
    Operation,
    Program,
    StateType,
    TensorData,
    TensorType,
    TupleData,
    TupleType,
    UnknownType,
    Value,
    Var,
    encode,
    fastencode,
)
from support.corpus import CORPUS
from support.native import agrees_with_python, require_native
from support.strategies import SETTINGS, programs, value_strategy

require_native("miltext.proto._fastencode")
pytestmark = pytest.mark.usefixtures("native_enabled")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_bytes(program):
    """The reference: encode.py's bytes, or the exception the Python path raises."""
    try:
        return encode._python_proto(program, False).SerializeToString(deterministic=True)
    except (Exception, RecursionError) as e:  # noqa: BLE001 - any failure of the Python path is the reference
        return e


def check(program, must_encode: bool = False):
    """C bytes == Python bytes whenever C answers; with `must_encode`, C must answer."""
    return agrees_with_python(fastencode.program_bytes, python_bytes, program, must_encode)


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def program_of(ops, **block):
    return Program({"main": Function(opset="CoreML7", blocks={"CoreML7": Block(operations=ops, **block)})})


# ---- real programs -----------------------------------------------------------------------------

CORPUS_PB = sorted(glob.glob(os.path.join(CORPUS, "**", "*.pb"), recursive=True))
COREMLTOOLS_PB = [p for p in CORPUS_PB if os.sep + "coremltools" + os.sep in p]
LEFT_TO_PYTHON = {"deep_nesting.pb"}   # nested deeper than the C path goes


def test_the_corpus_is_there():
    assert len(COREMLTOOLS_PB) > 50 and len(CORPUS_PB) > len(COREMLTOOLS_PB)


@pytest.mark.parametrize("path", CORPUS_PB, ids=lambda p: os.path.relpath(p, CORPUS))
def test_corpus_program(path):
    data = read(path)
    program = Program.from_proto(data)
    must = path in COREMLTOOLS_PB or os.path.basename(path) not in LEFT_TO_PYTHON
    got = check(program, must_encode=must)
    if got is not None and path in COREMLTOOLS_PB:
        assert got == data  # coremltools' bytes come back as they were
    if got is None:
        assert os.path.basename(path) in LEFT_TO_PYTHON


def _examples():
    return sorted(glob.glob(os.path.join(ROOT, "examples", "*.mil"))
                  + glob.glob(os.path.join(ROOT, "examples", "*", "model.mil")))


def test_there_are_examples():
    assert len(_examples()) > 5


@pytest.mark.parametrize("path", _examples(), ids=lambda p: os.path.relpath(p, os.path.join(ROOT, "examples")))
def test_example_program(path):
    from miltext.model.text import read_program_file
    check(read_program_file(path).program, must_encode=True)


def _bench():
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import programs as bench_programs
    finally:
        sys.path.pop(0)
    return bench_programs


def test_bench_transformer():
    program = _bench().miltext_transformer(2000)
    got = check(program, must_encode=True)
    assert check(Program.from_proto(got), must_encode=True) == got   # and what reads back from it


def test_bench_big_const():
    data = _bench().big_const_proto(250_000)[0]
    assert check(Program.from_proto(data), must_encode=True) == data


# ---- random programs ---------------------------------------------------------------------------

@SETTINGS
@given(programs)
def test_random_programs(program):
    check(program)


@SETTINGS
@given(value_strategy)
def test_every_value_as_an_argument_and_an_attribute(value):
    op = Operation("op", inputs={"x": [value], "name": [value], "val": [value, "v", None]},
                   attributes={"a": value, "val": value, "name": value},
                   outputs=[Var("y", TensorType("fp32", (2,), attributes={"t": value}))])
    program = program_of([op])
    program.attributes = {"k": value}
    check(program)


# ---- every case encode.py writes, C must write too ---------------------------------------------

def _everything() -> Program:
    nan_bits = np.array([0x7FC00001, 0xFFC00000, 0x7F800001, 0x80000000], np.uint32).view(np.float32)
    values = [
        Value.tensor(np.arange(6, dtype=np.float16).reshape(2, 3)), Value.tensor(np.float32(0.1)),
        Value.tensor(np.array([1, -2, 2**31 - 1, -2**31], np.int32)),
        Value.tensor(np.array([-1, 2**63 - 1, -2**63], np.int64)), Value.tensor([True, False, True]),
        Value.tensor(["x", "", "é", "名前"]), Value.tensor(np.array([1.5, -0.0, np.inf, np.nan])),
        Value(TensorType("fp32", (4,)), TensorData("floats", nan_bits)),
        Value.tensor(np.array([-8, 7, 0], np.int8), "int4"),
        Value(TensorType("fp32", (0,)), TensorData("floats")), Value(TensorType("int32", (0,)), TensorData("ints")),
        Value(TensorType("bool", (0,)), TensorData("bools")), Value(TensorType("int64", (0,)), TensorData("longInts")),
        Value(TensorType("fp64", (0,)), TensorData("doubles")), Value(TensorType("string", (0,)), TensorData("strings")),
        Value(TensorType("fp16", (0,)), TensorData("bytes", b"")), Value(TensorType("fp16", (0,)), TensorData(None)),
        Value(TensorType("fp16", (64, 64)), Blob(64)), Value(TensorType("fp16", (2,)), Blob(0, "")),
        Value(None, Blob(2**64 - 1, "other.bin"), doc="a doc"), Value(None, None, doc="only a doc"),
        Value(None, None), Value(UnknownType()), Value(None, EmptyImmediate()),
        Value(TupleType([TensorType("fp32"), UnknownType()]), TupleData([Value.tensor(1.0), Value(None)])),
        Value(ListType(TensorType("int32"), 3), ListData([Value.tensor(np.int32(1))])),
        Value(ListType(None, MISSING), ListData([])), Value(ListType(UnknownType(), VARIADIC)),
        Value(ListType(TensorType("fp32"), UNSET_DIM)), Value(ListType(TensorType("fp32"), None)),
        Value(DictType(TensorType("string"), TensorType("fp32")),
              DictData([(Value.tensor("k"), Value.tensor(2.0)), (None, None), (Value(None), Value(None, doc="d"))])),
        Value(DictType(None, None)), Value(StateType(TensorType("fp16", (1, 8)))), Value(StateType(None)),
        Value(TensorType("fp32", (None, VARIADIC, UNSET_DIM, 0, 2**64 - 1), rank=7)),
        Value(TensorType("fp32", (1,), rank=-1)), Value(TensorType("fp32", (), rank=2**63 - 1)),
        Value(TensorType("unused")), Value(TensorType("dtype57")), Value(TensorType("dtype0012")),
        Value(TensorType("float")), Value(TensorType("half", (3,))),
        Value(TensorType("fp32", (2,), attributes={"b": Value.tensor(1), "a": Value(None)})),
    ]
    ops = [Operation("const", attributes={"val": v, "name": Value.tensor(f"c{i}")}, outputs=[Var(f"c{i}", v.type)])
           for i, v in enumerate(values)]
    ops.append(Operation("odd", inputs={"": [""], "empty": [], "none": [None], "nothing": [Value(None)],
                                        "many": ["a", values[1], None, "", Value(None, doc="x")]},
                         outputs=[Var(""), Var("t", UnknownType())], attributes={"": Value(None)}))
    keys = ["", "a", "aa", "aab", "ab", "b", "ba", "\x00", "a\x00", "\xff", "é", "z", "zz", "\U0001F600"]
    ops.append(Operation("keys", inputs={k: [k] for k in keys}, attributes={k: Value.tensor(k) for k in keys}))
    inner = Block([Var("i", TensorType("int32"))], ["i", ""], [Operation("relu")], {"blk": Value.tensor(1)})
    ops.append(Operation("cond", blocks=[inner, Block(), copy.deepcopy(inner)]))
    fn = Function([Var("x", TensorType("fp32", (1, None))), Var("")], "CoreML7",
                  {"CoreML7": Block(operations=ops, outputs=["c0"]), "CoreML8": Block(), "": Block()},
                  {"fa": Value.tensor(np.float32(3))})
    return Program({"main": fn, "": Function(), "é": Function(opset="x")}, version=-5, doc="program doc",
                   attributes={k: Value(None) for k in keys})


def test_everything_encode_py_writes():
    program = _everything()
    got = check(program, must_encode=True)
    assert check(Program.from_proto(got), must_encode=True) == got


def test_version_and_empty_program():
    for program in (Program(), Program(version=0), Program(version=2**63 - 1), Program(version=-2**63),
                    Program({"": Function()}), Program(doc="d")):
        check(program, must_encode=True)


# ---- odd object graphs: None or the same bytes, never a crash --------------------------------------

class StrSub(str):
    pass


class ValueSub(Value):
    pass


def _odd_programs():
    """(what, program) pairs: each gives None or the Python path's bytes."""
    def op_with(**kw):
        return program_of([Operation("op", **kw)])

    def value_with(data=None, type_=None, doc=""):
        return op_with(attributes={"v": Value(type_, data, doc)})

    def tensor_with(field, values):
        td = TensorData(None)
        td.field, td.values = field, values
        return value_with(td)

    big_endian = np.arange(3, dtype=">f4")
    cases = {
        "numpy int dim": value_with(type_=TensorType("fp32", (np.int64(3),))),
        "numpy int version": Program(version=np.int64(1)),
        "bool version": Program(version=True),
        "float dim": value_with(type_=TensorType("fp32", (1.0,))),
        "bool dim": value_with(type_=TensorType("fp32", (True,))),
        "list shape": value_with(type_=TensorType("fp32")),
        "negative dim": value_with(type_=TensorType("fp32", (-1,))),
        "huge dim": value_with(type_=TensorType("fp32", (2**64,))),
        "huge version": Program(version=2**63),
        "huge rank": value_with(type_=TensorType("fp32", (), rank=2**63)),
        "numpy rank": value_with(type_=TensorType("fp32", (), rank=np.int32(2))),
        "negative blob offset": value_with(Blob(-1)),
        "huge blob offset": value_with(Blob(2**64)),
        "bytes blob file": value_with(Blob(0, b"w.bin")),
        "surrogate op type": op_with(),
        "surrogate key": op_with(attributes={"\ud800": Value(None)}),
        "surrogate string value": value_with(TensorData("strings", ["ok", "\udfff"])),
        "surrogate doc": value_with(doc="\ud800"),
        "str subclass name": program_of([Operation(StrSub("op"))]),
        "str subclass key": op_with(inputs={StrSub("x"): ["a"]}),
        "int key": op_with(attributes={1: Value(None)}),
        "Value subclass": op_with(attributes={"v": ValueSub(None, None, "d")}),
        "tuple of bindings": op_with(inputs={"x": ("a", "b")}),
        "int binding": op_with(inputs={"x": [1]}),
        "list of outputs as tuple": program_of([], outputs=("a",)),
        "bytes output name": program_of([], outputs=[b"a"]),
        "Elided": value_with(Elided()),
        "Elided deep": value_with(TupleData([Value(None, ListData([Value(None, Elided())]))])),
        "str as data": value_with("data"),
        "None in a tuple type": value_with(type_=TupleType([None])),
        "int as a type": value_with(type_=3),
        "unknown sentinel": value_with(type_=TensorType("fp32", (MISSING,))),
        "unknown dtype": value_with(type_=TensorType("fp33")),
        "dtype without digits": value_with(type_=TensorType("dtype")),
        "non-ascii dtype digits": value_with(type_=TensorType("dtype\u0663")),
        "huge dtype code": value_with(type_=TensorType("dtype99999999999")),
        "unknown tensor field": tensor_with("tuple", []),
        "non-str tensor field": tensor_with(1, []),
        "list of floats": tensor_with("floats", [1.0]),
        "float64 in floats": tensor_with("floats", np.arange(3, dtype=np.float64)),
        "big-endian floats": tensor_with("floats", big_endian),
        "2-d floats": tensor_with("floats", np.zeros((2, 2), np.float32)),
        "0-d floats": tensor_with("floats", np.zeros((), np.float32)),
        "strided floats": tensor_with("floats", np.arange(6, dtype=np.float32)[::2]),
        "uint32 in ints": tensor_with("ints", np.array([2**32 - 1], np.uint32)),
        "int64 in ints": tensor_with("ints", np.array([1], np.int64)),
        "int8 in bools": tensor_with("bools", np.array([1, 2], np.int8)),
        "bools from bytes": tensor_with("bools", np.array([0, 1, 2, 255], np.uint8).view(np.bool_)),
        "bytearray bytes": tensor_with("bytes", bytearray(b"ab")),
        "tuple of strings": tensor_with("strings", ("a",)),
        "bytes in strings": tensor_with("strings", [b"a"]),
        "dict items as lists": value_with(DictData([[Value(None), Value(None)]])),
        "dict items of three": value_with(DictData([(Value(None), Value(None), Value(None))])),
        "int dict key": value_with(DictData([(1, None)])),
        "attributes as a list": op_with(attributes=[("a", Value(None))]),
        "functions as a list": Program([Function()]),
        "a Block as a function": Program({"f": Block()}),
        "None doc": value_with(doc=None),
        "int doc": value_with(doc=5),
        "missing slot": value_with(),
    }
    cases["surrogate op type"].functions["main"].block.operations[0].type = "\ud800x"
    cases["list shape"].functions["main"].block.operations[0].attributes["v"].type.shape = [1, 2]
    del cases["missing slot"].functions["main"].block.operations[0].attributes["v"].doc
    return cases


ODD = _odd_programs()
MUST_REFUSE = {"Elided", "Elided deep", "surrogate op type", "surrogate key", "surrogate string value",
               "numpy int dim", "huge dim", "huge version", "negative blob offset", "Value subclass",
               "list shape", "missing slot", "unknown dtype", "big-endian floats", "str subclass key"}


@pytest.mark.parametrize("what", sorted(ODD))
def test_odd_object_graphs(what):
    got = check(ODD[what])
    if what in MUST_REFUSE:
        assert got is None


def test_negative_rank_and_ints_are_ten_byte_varints():
    program = program_of([Operation("op", attributes={
        "v": Value(TensorType("int32", (1,), rank=-1), TensorData("ints", np.array([-1], np.int32)))})])
    got = check(program, must_encode=True)
    assert b"\x10" + b"\xff" * 9 + b"\x01" in got   # rank = -1


def _cyclic_block() -> Program:
    block = Block()
    block.operations.append(Operation("cond", blocks=[block]))
    return program_of([Operation("loop", blocks=[block])])


def _cyclic_value() -> Program:
    data = TupleData()
    value = Value(None, data)
    data.values.append(value)
    return program_of([Operation("const", attributes={"val": value})])


def _cyclic_type() -> Program:
    t = TupleType()
    t.types.append(t)
    return program_of([Operation("op", outputs=[Var("y", t)])])


def _cyclic_dict() -> Program:
    attrs = {}
    t = TensorType("fp32", (), attributes=attrs)
    attrs["t"] = Value(t)
    return program_of([Operation("op", outputs=[Var("y", t)])])


@pytest.mark.parametrize("make", [_cyclic_block, _cyclic_value, _cyclic_type, _cyclic_dict])
def test_cycles_give_none_and_the_python_error(make):
    program = make()
    assert fastencode.program_bytes(program) is None
    with pytest.raises(ProgramError) as from_proto:
        program.to_proto()
    with pytest.raises(ProgramError) as from_bytes:
        program.to_bytes()
    assert str(from_bytes.value) == str(from_proto.value)


def _nested_blocks(depth: int) -> Program:
    block = Block(operations=[Operation("relu")])
    for _ in range(depth):
        block = Block(operations=[Operation("cond", blocks=[block])])
    return Program({"main": Function(opset="CoreML7", blocks={"CoreML7": block})})


def _nested_values(depth: int) -> Value:
    value = Value.tensor(1.0)
    for _ in range(depth):
        value = Value(TupleType([value.type]), TupleData([value]))
    return value


def test_deep_nesting():
    check(_nested_blocks(25), must_encode=True)
    assert fastencode.program_bytes(_nested_blocks(40)) is None
    assert fastencode.program_bytes(_nested_blocks(500)) is None
    check(program_of([Operation("const", attributes={"val": _nested_values(8)})]), must_encode=True)
    deep = program_of([Operation("const", attributes={"val": _nested_values(5000)})])
    assert fastencode.program_bytes(deep) is None
    for n in range(20, 40):  # wherever C stops, Python decides the same way
        check(_nested_blocks(n))
        check(program_of([Operation("const", attributes={"val": _nested_values(n)})]))


# ---- Program.to_bytes, strict, and the switch --------------------------------------------------------

def test_to_bytes_is_to_proto_serialized():
    for program in (_everything(), _bench().miltext_transformer(300), Program()):
        data = program.to_bytes()
        assert data == program.to_proto().SerializeToString(deterministic=True)
        assert program.to_bytes(strict=False) == data
        assert program.to_proto() == encode._python_proto(program, False)


def test_to_proto_uses_the_native_bytes(monkeypatch):
    program = _everything()
    calls = []
    real = fastencode.program_bytes
    monkeypatch.setattr(fastencode, "program_bytes", lambda p: calls.append(p) or real(p))
    msg = program.to_proto(strict=False)
    assert calls and msg.SerializeToString(deterministic=True) == encode._python_proto(program, False) \
        .SerializeToString(deterministic=True)


def _errors(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001
        return type(e), str(e)
    return None


def test_to_bytes_raises_what_to_proto_raises():
    undefined = program_of([Operation("relu", inputs={"x": ["nowhere"]}, outputs=[Var("y")])], outputs=["y"])
    elided = program_of([Operation("const", attributes={"val": Value(TensorType("fp32", (2,)), Elided())})])
    surrogate = program_of([Operation("\ud800")])
    cases = [(undefined, True), (elided, False), (elided, True), (surrogate, False), (ODD["huge version"], False),
             (ODD["int binding"], False), (_nested_blocks(60), True)]
    for program, strict in cases:
        expected = _errors(lambda p=program, s=strict: p.to_proto(strict=s).SerializeToString(deterministic=True))
        got = _errors(lambda p=program, s=strict: p.to_bytes(strict=s))
        assert got == expected, (program, strict)
    assert _errors(lambda: undefined.to_bytes(strict=True))[0] is ProgramError
    assert "is not defined" in _errors(lambda: undefined.to_bytes(strict=True))[1]
    assert _errors(lambda: elided.to_bytes())[0] is ProgramError
    assert undefined.to_bytes() == undefined.to_proto().SerializeToString(deterministic=True)
    deep = _nested_blocks(60)
    assert _errors(deep.to_bytes) == _errors(lambda: deep.to_proto().SerializeToString(deterministic=True))
    assert _errors(lambda: _nested_blocks(60).to_bytes(strict=True))[0] is ProgramError


def test_strict_takes_the_native_path():
    program = _everything()
    defined = program_of([Operation("relu", inputs={"x": ["a"]}, outputs=[Var("y")])], outputs=["y"],
                         inputs=[Var("a", TensorType("fp32"))])
    assert defined.to_bytes(strict=True) == defined.to_proto(strict=True).SerializeToString(deterministic=True) \
        == fastencode.program_bytes(defined)
    assert program.to_bytes() == fastencode.program_bytes(program)


def test_environment_variable_disables_it(monkeypatch):
    program = _everything()
    data = program.to_bytes()
    assert fastencode.program_bytes(program) == data
    monkeypatch.setenv("MILTEXT_PURE_PYTHON", "1")
    assert not fastencode.available()
    assert fastencode.program_bytes(program) is None

    class Forbidden:
        def __getattr__(self, name):
            raise AssertionError("the extension ran with MILTEXT_PURE_PYTHON=1")

    monkeypatch.setattr(fastencode, "_fastencode", Forbidden())
    assert program.to_bytes() == data
    assert program.to_proto().SerializeToString(deterministic=True) == data


def test_the_printer_shares_the_switch(monkeypatch):
    from miltext import native
    from miltext.text.mil import fastprint
    monkeypatch.setenv("MILTEXT_PURE_PYTHON", "1")
    assert native.pure_python() and not fastprint.available() and not fastencode.available()
    monkeypatch.setenv("MILTEXT_PURE_PYTHON", "0")
    assert not native.pure_python() and fastprint.available() and fastencode.available()


def test_an_encoder_that_disagrees_with_protobuf_is_not_used(monkeypatch):
    """The extension checks itself against the installed protobuf once per process (map key
    order is protobuf's own rule); one that writes other bytes is left unused."""
    program = Program.from_proto(read(COREMLTOOLS_PB[0]))
    expected = program.to_proto().SerializeToString(deterministic=True)
    real = fastencode._fastencode

    class Disagreeing:
        configure = real.configure

        @staticmethod
        def program_bytes(p):
            data = real.program_bytes(p)
            return None if data is None else data + b"\x08\x02"  # one more field: other bytes

    monkeypatch.setattr(fastencode, "_fastencode", Disagreeing())
    monkeypatch.setattr(fastencode, "_configured", False)
    monkeypatch.setattr(fastencode, "_agrees_with_protobuf", True)
    assert fastencode.program_bytes(program) is None
    assert program.to_bytes() == expected
    monkeypatch.setattr(fastencode, "_fastencode", real)
    monkeypatch.setattr(fastencode, "_configured", False)
    assert fastencode.program_bytes(program) == expected
