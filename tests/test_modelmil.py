"""Apple's model.mil dialect (docs/modelmil.md), against real compiler output:

- every compiled file in tests/corpus/modelmil reads, and prints back byte for byte;
- every whole line of the fragments that coremltools' tests assert reads as what it is (an
  op, a call, a value), and prints back in the program(1.0) or program(1.3) spelling it is in;
- every corpus program prints as model.mil and reads back to the same proto bytes, except the
  ones the dialect cannot express, which are refused with a message saying what and where;
- the command line reads model.mil by itself, prints it (--dialect modelmil), and reads a
  compiled model folder (.mlmodelc) without opening its weights.
"""
import copy
import os
import re
import shutil
import time

import numpy as np
import pytest

import miltext
from miltext.ir import MISSING, UNSET_DIM, VARIADIC, Blob, Block, DictData, DictType, ListData, ListType, TensorData, TensorType, TupleData, TupleType, UnknownType, Value
from miltext.text import lexemes
from miltext.text.modelmil.parser import parse_fragment
from miltext.text.modelmil.printer import operation_text, print_modelmil, value_text
from miltext.text.modelmil.words import looks_like_modelmil, text_version
from support.cli import run
from support.corpus import CORPUS, case_id, corpus_files, proto_cases

COMPILED = corpus_files("modelmil", ".mil") + corpus_files("wild", ".mil")
FRAGMENTS = os.path.join(CORPUS, "modelmil", "07_ios18_vs_ios16_fragments.txt")
DOC = os.path.join(os.path.dirname(CORPUS), "..", "docs", "modelmil.md")
WEIGHT_FILE = "@model_path/weights/weight.bin"


def read(path, mode="r"):
    with open(path, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as f:
        return f.read()


def proto_bytes(program) -> bytes:
    return program.to_proto().SerializeToString(deterministic=True)


# ---- real compiled files ------------------------------------------------------------------------

def test_the_corpus_has_compiled_files():
    assert len(COMPILED) >= 10
    headers = {read(p).split("\n", 1)[0] for p in COMPILED}
    assert headers == {"program(1.0)", "program(1.3)"}


def _compiler(text: str) -> tuple:
    version = re.search(r'\{"coremlc-version", "([0-9.]+)"\}', text).group(1)
    return tuple(int(x) for x in version.split("."))


# Files whose version breaks the rule for programs that never had one (docs/modelmil.md §2).
VERSION_EXCEPTIONS = {"38_own_coremlc3520-program1.0-lut8.mil"}


def _header_version(text: str) -> str:
    return text.split("\n", 1)[0][len("program("):-1]


@pytest.mark.parametrize("path", COMPILED, ids=case_id)
def test_the_version_follows_the_compiler_that_wrote_the_file(path):
    """3500.32.1 writes program(1.0) for ios16 and ios17 functions; 3520.5.1 and 3600.25.1
    write program(1.3) for a single ios17 function, with the short scalar spellings, but for
    one 3520.5.1 file in 1.0. The rule is for programs that never had a version: one read from
    model.mil keeps its own."""
    text = read(path)
    program = miltext.loads(text)
    by_rule = "1.3" if _compiler(text) >= (3520,) else "1.0"
    assert program.modelmil_version == _header_version(text)
    assert (_header_version(text) == by_rule) == (case_id(path) not in VERSION_EXCEPTIONS)
    assert text_version(miltext.Program.from_proto(proto_bytes(program))) == by_rule
    assert ("tensor<string, []>" in text) == (program.modelmil_version == "1.0")


def test_a_newer_compiler_makes_an_ios16_program_1_3_and_an_unknown_one_keeps_the_opset_rule():
    text = read(os.path.join(CORPUS, "modelmil", "01_ios16_add_model.mil"))
    assert text_version(miltext.loads(text)) == "1.0"
    for compiler, version in [("3520.5.1", "1.3"), ("3600.25.1", "1.3"), ("3519.99", "1.0"),
                              ("3402.4.1", "1.0"), ("unknown", "1.0"), ("", "1.0")]:
        edited = re.sub(r'"coremlc-version", "[0-9.]+"', f'"coremlc-version", "{compiler}"', text)
        assert f"\"coremlc-version\", \"{compiler}\"" in edited
        program = miltext.Program.from_proto(proto_bytes(miltext.loads(edited)))  # no version read
        assert text_version(program) == version, compiler
        printed = miltext.dumps(program, dialect="modelmil")
        assert printed.startswith(f"program({version})\n")
        assert miltext.dumps(miltext.loads(edited), dialect="modelmil") == edited  # the read one kept
        assert proto_bytes(miltext.loads(printed)) == proto_bytes(program)


@pytest.mark.parametrize("path", COMPILED, ids=case_id)
def test_compiled_file_prints_back_byte_for_byte(path):
    text = read(path)
    assert looks_like_modelmil(text)
    program = miltext.loads(text, path)  # the dialect is recognized, not asked for
    assert miltext.dumps(program, dialect="modelmil") == text
    assert not text.endswith("\n")


@pytest.mark.parametrize("path", COMPILED, ids=case_id)
def test_compiled_file_reads_back_from_its_proto(path):
    """model.mil -> proto -> model.mil: nothing of the text but its version lives outside
    the proto."""
    text = read(path)
    program = miltext.Program.from_proto(proto_bytes(miltext.loads(text, path)))
    assert print_modelmil(program, _header_version(text)) == text
    assert (miltext.dumps(program, dialect="modelmil") == text) == (case_id(path) not in VERSION_EXCEPTIONS)


def test_compiled_file_reads_as_its_parts():
    program = miltext.loads(read(os.path.join(CORPUS, "modelmil", "04_ios17_decoder_lstm.mil")))
    assert program.version == 1 and list(program.functions) == ["main"]
    build_info = program.attributes["buildInfo"]
    assert isinstance(build_info.type, DictType)
    entries = {k.data.values[0]: v.data.values[0] for k, v in build_info.data.items}
    assert entries["coremlc-version"] == "3500.32.1"
    fn = program.functions["main"]
    assert fn.opset == "CoreML7" and list(fn.blocks) == ["CoreML7"]
    assert [v.name for v in fn.inputs] == ["c_in", "h_in", "target_length", "targets"]
    assert fn.block.outputs == ["decoder", "h_out", "c_out"]
    ops = {op.outputs[0].name: op for op in fn.block.operations}
    weight = ops["module_prediction_embed_weight_to_fp16"].attributes["val"]
    assert weight.type == TensorType("fp16", (1027, 640)) and weight.data == Blob(64, WEIGHT_FILE)
    lstm = ops["input_cast_fp16_0"]
    assert lstm.type == "lstm" and [v.name for v in lstm.outputs] == [
        "input_cast_fp16_0", "input_cast_fp16_1", "input_cast_fp16_2"]
    assert lstm.name == "input_cast_fp16" and lstm.inputs["x"] == ["input_3_cast_fp16"]
    axis = ops["y_axis_0"].attributes["val"]
    assert axis.type == TensorType("int32") and axis.array.tolist() == 0


def test_variadic_inputs_and_sub_tensors_read():
    text = ("program(1.0)\n{\n    func main<ios17>(tensor<fp32, [1, ?]> a) {\n"
            "            tensor<fp32, [2, ?]> c = concat(axis = tensor<int32, []>(0), "
            "values = (a, a))[name = tensor<string, []>(\"c\")];\n        } -> (c);\n}")
    op = miltext.loads(text).functions["main"].block.operations[0]
    assert op.inputs["values"] == ["a", "a"]
    assert op.inputs["axis"][0].type == TensorType("int32")
    assert miltext.dumps(miltext.loads(text), dialect="modelmil") == text


# ---- the fragments coremltools' tests assert -----------------------------------------------------

def _fragment_groups():
    """(header, lines) per group of the fragments file: each group starts with `# file:line`."""
    groups = []
    for line in read(FRAGMENTS).split("\n"):
        if line.startswith("# coremltools/"):
            groups.append((line, []))
        elif line and not line.startswith("#") and groups:
            groups[-1][1].append(line)
    return groups


def _version(line: str) -> str:
    """The dialect version a line is spelled in: 1.3 writes string("..."), 1.0 tensor<string, []>."""
    return "1.0" if "tensor<string, []>" in line or "tensor<uint64, []>" in line else "1.3"


def test_every_fragment_line_is_checked():
    groups = _fragment_groups()
    lines = [line for _, ls in groups for line in ls]
    assert len(groups) == 5 and len(lines) == 20
    kinds = [_fragment_kind(line) for line in lines]
    assert kinds.count("operation") == 9 and kinds.count("call") == 5
    assert kinds.count("prefix") == 2 and kinds.count("blob data") == 4


def _fragment_kind(line: str) -> str:
    if line.endswith(";"):
        return "operation"
    if line.startswith("(BLOBFILE("):
        return "blob data"
    if line.count("(") > line.count(")"):
        return "prefix"
    return "call"


def _lines_of(kind):
    return [pytest.param(line, id=f"{kind}{i}") for i, line in
            enumerate(line for _, ls in _fragment_groups() for line in ls if _fragment_kind(line) == kind)]


@pytest.mark.parametrize("line", _lines_of("operation"))
def test_fragment_op_line_reads_as_an_op_and_prints_back(line):
    op = parse_fragment(line, "operation")
    assert op.type == "const" and op.inputs == {}
    assert set(op.attributes) == {"name", "val"}
    assert op.attributes["val"].data.file == WEIGHT_FILE
    assert op.attributes["val"].data.offset in (64, 576, 2176, 63360)
    assert operation_text(op, _version(line)) == line
    # The other version's spelling of the same op reads as the same op.
    other = "1.3" if _version(line) == "1.0" else "1.0"
    assert parse_fragment(operation_text(op, other), "operation") == op


def test_fragment_ops_read_the_same_in_both_versions():
    """const_1 of the iOS 16 group and of the iOS 18 group: one op, two spellings."""
    ops = [parse_fragment(line, "operation") for _, ls in _fragment_groups() for line in ls
           if line.startswith("tensor<fp32, [500]> const_1 ")]
    assert len(ops) == 2 and ops[0] == ops[1]


@pytest.mark.parametrize("line", _lines_of("call"))
def test_fragment_call_reads_as_a_call(line):
    op_type, inputs = parse_fragment(line, "call")
    assert op_type == "add" and set(inputs) == {"x", "y"}
    assert all(len(b) == 1 and isinstance(b[0], str) for b in inputs.values())


@pytest.mark.parametrize("line", _lines_of("prefix"))
def test_fragment_prefix_reads_up_to_its_end(line):
    """A line coremltools' test quotes only the start of: it reads as far as it goes, then
    wants more; its first input reads as an inline BLOBFILE value of a uint1 tensor."""
    with pytest.raises(miltext.ParseError) as info:
        parse_fragment(line, "call")
    assert info.value.message.startswith("unexpected end of text: expected ',' or ')'")
    assert (info.value.line, info.value.column) == (1, len(line) + 1)
    value = parse_fragment(line.split(" = ", 1)[1], "value")
    assert value.type == TensorType("uint1", (32, 32)) and value.data == Blob(64, WEIGHT_FILE)
    assert value_text(value, "1.3") == line.split(" = ", 1)[1]


@pytest.mark.parametrize("line", _lines_of("blob data"))
def test_fragment_blob_data_reads_as_the_data_of_a_value(line):
    value = parse_fragment("tensor<fp16, [8]>" + line, "value")
    assert value.data == Blob(int(re.search(r"\((\d+)\)\)\)$", line).group(1)), WEIGHT_FILE)
    assert value_text(value, _version(line)) == "tensor<fp16, [8]>" + line


@pytest.mark.parametrize("text,expected", [
    ("tensor<fp16, [1, ?]>", TensorType("fp16", (1, None))),
    ("int32", TensorType("int32")),
    ("tensor<int32, []>", TensorType("int32")),
    ("list<tensor<int32, [2]>, ?>", ListType(TensorType("int32", (2,)), None)),
    ("tuple<string, dict<string, tensor<int32, [?]>>>",
     TupleType([TensorType("string"), DictType(TensorType("string"), TensorType("int32", (None,)))])),
])
def test_type_fragment(text, expected):
    assert parse_fragment(text, "type") == expected


# ---- the corpus: proto -> model.mil -> proto -------------------------------------------------------

# The corpus programs model.mil cannot express, each with the first thing that stops it.
REFUSED = {
    "dtype_zoo_exotic": "function 'main', op 'bf16' (const): model.mil cannot express the name 'bf16': "
                        "a name is an identifier ([A-Za-z_][A-Za-z0-9_]*) and not one of the dialect's "
                        "words (tensor, fp32, state, ...)",
    "empty_program": "model.mil cannot express Program.version 0: program(1.0) and program(1.3) both "
                     "stand for version 1",
    "float_bit_patterns": "function 'main', op 'fbits' (const), attribute 'val': model.mil cannot express "
                          "the fp32 NaN 0x7fc00001, which is not the default NaN 0x7fc00000 that nan stands for",
    "function_attributes_multi_specialization": "function 'main': model.mil cannot express block "
                                                "specializations other than one for the function's opset "
                                                "CoreML8 (it has: CoreML7, CoreML8); a function shows exactly one block",
    "odd_names_and_strings": "function 'main': model.mil cannot express the name 'input.0/x:0': a name is "
                             "an identifier ([A-Za-z_][A-Za-z0-9_]*) and not one of the dialect's words "
                             "(tensor, fp32, state, ...)",
    "program_doc_and_attributes": "model.mil cannot express a program doc string",
    "tuple_types_and_attributes": "function 'main': model.mil cannot express attributes of a function's block",
    "unknown_shapes_and_unset_fields": "function 'main': model.mil cannot express a tensor type of unknown rank",
}


def _name(path: str) -> str:
    return os.path.basename(path)[:-len(".pb")]


@pytest.mark.parametrize("path", proto_cases(), ids=case_id)
def test_corpus_program_through_modelmil_gives_the_same_proto(path):
    data = read(path, "rb")
    program = miltext.Program.from_proto(data)
    if _name(path) in REFUSED:
        with pytest.raises(miltext.ProgramError) as info:
            miltext.dumps(program, dialect="modelmil")
        assert str(info.value) == REFUSED[_name(path)]
        return
    text = miltext.dumps(program, dialect="modelmil")
    assert text.startswith(f"program({text_version(program)})\n") and text.endswith("}")
    back = miltext.loads(text, _name(path) + ".mil")
    assert proto_bytes(back) == data
    assert miltext.dumps(back, dialect="modelmil") == text


def test_only_hand_made_edge_programs_are_refused():
    assert {_name(p) for p in proto_cases() if "/edge/" in p} > set(REFUSED)


@pytest.mark.parametrize("name,version", [("torch_mlp", "1.0"), ("opset_ios15", "1.0"),
                                          ("constexpr_ios16_affine", "1.0"), ("sdpa_ios18", "1.3"),
                                          ("state_basic", "1.3")])
def test_the_version_follows_the_opsets(name, version):
    program = miltext.Program.from_proto(read(os.path.join(CORPUS, "coremltools", name + ".pb"), "rb"))
    text = miltext.dumps(program, dialect="modelmil")
    assert text.startswith(f"program({version})\n")
    assert ('[name = string("' in text) == (version == "1.3")
    assert ('[name = tensor<string, []>("' in text) == (version == "1.0")


def test_a_multifunction_program_is_written_in_1_3_main_first():
    program = miltext.loads(read(COMPILED[0]))
    program.modelmil_version = None  # a program that never had a version (not the one read)
    main = program.functions.pop("main")
    program.functions["second"] = copy.deepcopy(main)
    program.functions["main"] = main
    text = miltext.dumps(program, dialect="modelmil")
    assert text.startswith("program(1.3)\n") and text.count("    func ") == 2
    assert text.index("func main<ios16>") < text.index("func second<ios16>")
    assert "tensor<fp16, [1, 10]> var_3 = mul(x = x, y = y)[name = string(\"op_3_cast_fp16\")];" in text
    assert proto_bytes(miltext.loads(text)) == proto_bytes(program)


@pytest.mark.parametrize("path", COMPILED, ids=case_id)
def test_either_version_reads_back_to_the_same_program(path):
    program = miltext.loads(read(path))
    text_1_3 = print_modelmil(program, version="1.3")
    assert text_1_3.startswith("program(1.3)\n") and "tensor<string, []>" not in text_1_3
    assert proto_bytes(miltext.loads(text_1_3)) == proto_bytes(program)


# ---- floats ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,value,text", [
    ("fp32", 1.0, "0x1p+0"), ("fp16", 0.5, "0x1p-1"), ("fp32", 0.0, "0x0p+0"),
    ("fp32", -0.0, "-0x0p+0"), ("fp32", 0.97, "0x1.f0a3d8p-1"), ("fp16", -10000.0, "-0x1.388p+13"),
    ("fp16", 1.0013580322265625e-05, "0x1.5p-17"), ("fp32", 1e-45, "0x1p-149"),
    ("fp64", 5e-324, "0x1p-1074"), ("fp16", float("inf"), "inf"), ("fp16", float("-inf"), "-inf"),
    ("fp32", float("nan"), "nan"),
])
def test_float_spelling(dtype, value, text):
    """The compiler's spellings (docs/modelmil.md §6); each reads back to the same bits."""
    value_ = Value.tensor(np.array([value], dtype={"fp16": np.float16, "fp32": np.float32,
                                                    "fp64": np.float64}[dtype]))
    written = value_text(value_)
    assert written == f"tensor<{dtype}, [1]>([{text}])"
    assert proto_bytes_of_value(parse_fragment(written, "value")) == proto_bytes_of_value(value_)


def proto_bytes_of_value(value: Value) -> bytes:
    from miltext.ir import encode
    from miltext.proto import schema
    msg = schema.Value()
    encode.value(value, msg)
    return msg.SerializeToString(deterministic=True)


def test_hex_float_of_every_fp16():
    bits = np.arange(0x10000, dtype=np.uint16)
    bits = bits[~np.isnan(bits.view(np.float16))]
    texts = lexemes.format_hex_floats(miltext.dtypes.by_name("fp16"), bits)
    back = np.array([lexemes.parse_float(t) for t in texts]).astype(np.float16).view(np.uint16)
    assert np.array_equal(back, bits)


# ---- what model.mil cannot express ----------------------------------------------------------------

BASE = ("program(1.0)\n{\n    func main<ios17>(tensor<fp32, [2]> x) {\n"
        "            tensor<fp32, [2]> y = relu(x = x)[name = tensor<string, []>(\"y\")];\n"
        "        } -> (y);\n}")


def _op(program):
    return program.functions["main"].block.operations[0]


def _set_val(value):
    def change(program):
        _op(program).attributes["val"] = value
    return change


def _nested_with_attributes(program):
    _op(program).blocks.append(Block(attributes={"a": Value.tensor(1.0)}))


def _function_block_input(program):
    program.functions["main"].block.inputs.append(copy.deepcopy(program.functions["main"].inputs[0]))


def _opset(program):
    fn = program.functions["main"]
    fn.blocks = {"CoreML10": fn.blocks["CoreML7"]}
    fn.opset = "CoreML10"


CANNOT = [
    ("value doc", lambda p: setattr(_op(p).attributes["name"], "doc", "d"),
     "function 'main', op 'y' (relu), attribute 'name': model.mil cannot express a value's doc string"),
    ("unset binding", lambda p: _op(p).inputs.update(x=[None]),
     "function 'main', op 'y' (relu), input 'x': model.mil cannot express a binding with neither a name nor a value"),
    ("input without bindings", lambda p: _op(p).inputs.update(x=[]),
     "input 'x' with no bindings"),
    ("unknown type", lambda p: setattr(_op(p).outputs[0], "type", UnknownType()),
     "the unknown type (a ValueType with no case set)"),
    ("untyped output", lambda p: setattr(_op(p).outputs[0], "type", None), "output 'y' without a type"),
    ("variadic dim", lambda p: setattr(_op(p).outputs[0], "type", TensorType("fp32", (VARIADIC,))),
     "a variadic dimension"),
    ("unset dim", lambda p: setattr(_op(p).outputs[0], "type", TensorType("fp32", (UNSET_DIM,))),
     "a dimension left unset"),
    ("rank", lambda p: setattr(_op(p).outputs[0], "type", TensorType("fp32", (2,), rank=3)),
     "a tensor type whose rank (3) is not its number of dims (1)"),
    ("unknown rank", lambda p: setattr(_op(p).outputs[0], "type", TensorType("fp32", (), rank=-1)),
     "a tensor type of unknown rank"),
    ("tensor attributes", lambda p: setattr(_op(p).outputs[0], "type",
                                            TensorType("fp32", (2,), attributes={"k": Value.tensor(1)})),
     "tensor type attributes"),
    ("unknown dtype", lambda p: setattr(_op(p).outputs[0], "type", TensorType("dtype99", (2,))),
     "the dtype dtype99"),
    ("list without length", lambda p: setattr(_op(p).outputs[0], "type", ListType(TensorType("fp32"), MISSING)),
     "a list type without a length"),
    ("list without element type", lambda p: setattr(_op(p).outputs[0], "type", ListType(None, 2)),
     "a type left unset"),
    ("storage field", _set_val(Value(TensorType("fp16", (2,)), TensorData("floats", [1.0, 2.0]))),
     "attribute 'val': model.mil cannot express fp16 elements stored in floats"),
    ("element count", _set_val(Value(TensorType("fp32", (3,)), TensorData("floats", [1.0, 2.0]))),
     "stored elements that are not the 3 fp32 elements of the type tensor<fp32, [3]>"),
    ("unknown dims", _set_val(Value(TensorType("fp32", (None, None)), TensorData("floats", [1.0] * 4))),
     "4 elements under tensor<fp32, [?, ?]>: the nesting of a literal cannot say how the unknown dims split them"),
    ("no data", _set_val(Value(TensorType("fp32"), None)), "a value without data"),
    ("no type", _set_val(Value(None, TensorData("floats", [1.0]))), "a value without a type"),
    ("element type", _set_val(Value(ListType(TensorType("int32"), 2),
                                    ListData([Value.tensor(np.int32(1)), Value.tensor(np.int64(2))]))),
     "an element of type tensor<int64, []> in a container of tensor<int32, []>"),
    ("unset dict key", _set_val(Value(DictType(TensorType("string"), TensorType("string")),
                                      DictData([(None, Value.tensor("v"))]))), "an element left unset"),
    ("tuple size", _set_val(Value(TupleType([TensorType("int32")]), TupleData([]))),
     "a tuple of 0 values under a tuple type of 1"),
    ("blob element", _set_val(Value(TupleType([TensorType("fp32", (2,))]),
                                    TupleData([Value(TensorType("fp32", (2,)), Blob(64))]))),
     "a blob value inside a list, tuple or dict"),
    ("other NaN", _set_val(Value(TensorType("fp16"), TensorData("bytes", b"\x01\x7e"))),
     "the fp16 NaN 0x7e01, which is not the default NaN 0x7e00 that nan stands for"),
    ("negative NaN", _set_val(Value(TensorType("fp32"), TensorData(
        "floats", np.array([0xFFC00000], np.uint32).view(np.float32)))),
     "the fp32 NaN 0xffc00000, which is not the default NaN 0x7fc00000 that nan stands for"),
    ("dotted name", lambda p: setattr(_op(p).outputs[0], "name", "y.1"), "the name 'y.1'"),
    ("keyword name", lambda p: setattr(_op(p).outputs[0], "name", "state"), "the name 'state'"),
    ("keyword op type", lambda p: setattr(_op(p), "type", "fp32"), "the name 'fp32'"),
    ("block op without outputs", lambda p: (setattr(_op(p), "type", "block"), _op(p).outputs.clear()),
     "the op type 'block' on an op without outputs"),
    ("nested block attributes", _nested_with_attributes, "attributes of a nested block"),
    ("function without a block", lambda p: p.functions["main"].blocks.clear(),
     "function 'main': model.mil cannot express a function without a block"),
    ("function block inputs", _function_block_input,
     "function 'main': model.mil cannot express inputs of a function's block"),
    ("opset", _opset, "function 'main': model.mil cannot express opset 'CoreML10'"),
]


@pytest.mark.parametrize("change,message", [c[1:] for c in CANNOT], ids=[c[0] for c in CANNOT])
def test_what_model_mil_cannot_express_is_refused(change, message):
    program = miltext.loads(BASE)
    assert miltext.dumps(program, dialect="modelmil") == BASE
    change(program)
    with pytest.raises(miltext.ProgramError) as info:
        miltext.dumps(program, dialect="modelmil")
    assert message in str(info.value)


def test_an_unknown_dialect_is_a_value_error():
    with pytest.raises(ValueError, match="unknown dialect"):
        miltext.dumps(miltext.loads(BASE), dialect="coremltools")


# ---- reading: what the reader accepts and refuses -------------------------------------------------

def test_the_reader_tolerates_hand_written_text():
    """No spaces, program(1), decimal floats, 1.3 scalars in a 1.0 file: the same program."""
    hand = ('program(1) {func main<ios17>(tensor<fp32, [2]> x){tensor<fp32, [2]> y=relu(x=x)'
            '[name=string("y")];}->(y);}')
    assert miltext.dumps(miltext.loads(hand), dialect="modelmil") == BASE
    decimal = BASE.replace("relu(x = x)", "add(x = x, y = tensor<fp32, []>(0.5))")
    hexed = BASE.replace("relu(x = x)", "add(x = x, y = tensor<fp32, []>(0x1p-1))")
    assert miltext.dumps(miltext.loads(decimal), dialect="modelmil") == hexed.replace("relu", "add")


def test_canonical_text_is_not_taken_for_model_mil():
    assert not looks_like_modelmil('program(version=1)\n\nmain[CoreML7]() {\n}\n')
    assert looks_like_modelmil("  program ( 1.3 ) {")


@pytest.mark.parametrize("text,line,column,message", [
    (BASE.replace('("y")];', '("y")]'), 4, 78, "missing ';' at the end of the op: expected ';'"),
    (BASE.replace("<ios17>", "<ios19>"), 3, 15,
     "unknown opset 'ios19': model.mil's opsets are ios13, ios14, ios15, ios16, ios17, ios18, ios26"),
    (BASE.replace("(tensor<fp32, [2]> x)", "(tensor<fp31, [2]> x)"), 3, 29,
     "unexpected name 'fp31': expected a type such as tensor<fp32, [2]>"),
    (BASE.replace("relu(x = x)", "relu(x = %x)"), 4, 44,
     "unexpected character '%': expected a value or a name"),
    (BASE.replace("relu(x = x)", "relu(x = tensor<fp32, [2]>([[1, 2]]))"), 4, 61,
     "a literal of shape [1, 2] where the type says [2]"),
    (BASE.replace("relu(x = x)", "relu(x = int8(300))"), 4, 49, "300 does not fit in int8 (-128 to 127)"),
    (BASE.replace("relu(x = x)", "relu(x = x, x = x)"), 4, 47, "input 'x' is given twice"),
    (BASE.replace('"y"', '"\\q"'), 4, 74, "unknown escape \\q in a string (write \\\\ for a backslash)"),
    (BASE[:-1], 5, 18, "unexpected end of text: expected 'func' or '}'"),
    ("program(1.0)", 1, 13, "unexpected end of text: expected '{' or '['"),
])
def test_errors_point_at_the_mistake(text, line, column, message):
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text, "model.mil")
    e = info.value
    assert (e.line, e.column, e.message) == (line, column, message)
    head, source, caret = str(e).split("\n")
    assert head == f"model.mil:{line}:{column}: error: {message}"
    assert source == text.split("\n")[line - 1] and caret == " " * (column - 1) + "^"
    for internal in ("__ANON", "Token(", "RPAR", "LPAR", "SEMICOLON", "$END", "MODELMIL_TYPE"):
        assert internal not in str(e)


def test_independent_errors_are_reported_together():
    text = BASE.replace("relu(x = x)", "relu(x = x y = x)").replace(
        "        } -> (y);", '            tensor<fp32, []> z = const()[val = string(3)];\n        } -> (y);')
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text, "model.mil")
    assert [(line, column) for line, column, _ in info.value.errors] == [(4, 46), (5, 55)]
    assert info.value.errors[1][2] == "string elements must be strings"


# ---- the docs -------------------------------------------------------------------------------------

def _doc_examples():
    return [m.group(1).rstrip("\n") for m in
            re.finditer(r"^```modelmil\n(.*?)^```", read(DOC), re.M | re.S)]


def test_the_doc_examples_print_back_byte_for_byte():
    examples = _doc_examples()
    assert len(examples) >= 2
    for text in examples:
        assert miltext.dumps(miltext.loads(text), dialect="modelmil") == text


def test_the_doc_quotes_a_real_refusal():
    assert REFUSED["float_bit_patterns"] in read(DOC)


# ---- speed ----------------------------------------------------------------------------------------

def test_a_600_kb_file_reads_in_well_under_a_few_seconds():
    """The 04 decoder's ops again and again, each copy's vars renamed: about 600 KB."""
    text = read(os.path.join(CORPUS, "modelmil", "04_ios17_decoder_lstm.mil"))
    lines = text.split("\n")
    head, body = lines[:4], lines[4:-2]
    produced = {v.name for op in miltext.loads(text).functions["main"].block.operations for v in op.outputs}
    word = re.compile(r"\b(" + "|".join(sorted(produced, key=len, reverse=True)) + r")\b")
    out, copies = list(head), 0
    while sum(len(line) + 1 for line in out) < 600_000:
        out.extend(word.sub(lambda m, n=copies: f"{m.group(1)}_{n}", line) for line in body)
        copies += 1
    out.append(f"        }} -> (decoder_{copies - 1});")
    out.append("}")
    big = "\n".join(out)
    start = time.perf_counter()
    program = miltext.loads(big)
    elapsed = time.perf_counter() - start
    assert len(program.functions["main"].block.operations) == 39 * copies
    assert elapsed < 5.0, f"{len(big) // 1024} KB read in {elapsed:.1f} s"
    assert miltext.dumps(program, dialect="modelmil") == big


# ---- the command line -----------------------------------------------------------------------------

def _compiled_model(tmp_path, name="Decoder.mlmodelc") -> str:
    """A compiled model folder around a real model.mil; its weight file is junk, which a
    reader that opened it would choke on."""
    folder = tmp_path / name
    (folder / "weights").mkdir(parents=True)
    shutil.copy(os.path.join(CORPUS, "modelmil", "04_ios17_decoder_lstm.mil"), folder / "model.mil")
    (folder / "weights" / "weight.bin").write_bytes(b"not a weight file")
    (folder / "coremldata.bin").write_bytes(b"\x00\x01")
    return name


@pytest.mark.parametrize("path", COMPILED, ids=case_id)
def test_cli_prints_model_mil_back_as_it_is(path, tmp_path):
    shutil.copy(path, tmp_path / "model.mil")
    result = run("print", "--dialect", "modelmil", "model.mil", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == read(path) and result.stderr == ""


def test_cli_reads_model_mil_by_itself(tmp_path):
    path = COMPILED[-1]
    shutil.copy(path, tmp_path / "model.mil")
    result = run("print", "model.mil", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == miltext.dumps(miltext.loads(read(path)))


def test_cli_reads_a_compiled_model_folder(tmp_path):
    name = _compiled_model(tmp_path)
    text = read(tmp_path / name / "model.mil")
    result = run("print", name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == miltext.dumps(miltext.loads(text))
    assert "(blob)" in result.stdout  # weights stay references
    result = run("print", "--dialect", "modelmil", name, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == text


def test_cli_builds_model_mil_into_its_proto(tmp_path):
    name = _compiled_model(tmp_path)
    result = run("build", f"{name}/model.mil", "-o", "program.pb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    expected = miltext.loads(read(tmp_path / name / "model.mil")).to_proto(strict=True)
    assert (tmp_path / "program.pb").read_bytes() == expected.SerializeToString(deterministic=True)


@pytest.mark.parametrize("name", ["coremltools/torch_mlp", "coremltools/state_basic", "coremltools/while_loop_basic"])
def test_cli_prints_a_proto_as_model_mil(name, tmp_path):
    shutil.copy(os.path.join(CORPUS, name + ".pb"), tmp_path / "program.pb")
    result = run("print", "--dialect", "modelmil", "program.pb", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = (tmp_path / "program.pb").read_bytes()
    assert result.stdout == miltext.dumps(miltext.Program.from_proto(data), dialect="modelmil")
    assert proto_bytes(miltext.loads(result.stdout)) == data


def test_cli_says_what_model_mil_cannot_express(tmp_path):
    shutil.copy(os.path.join(CORPUS, "edge", "float_bit_patterns.pb"), tmp_path / "odd.pb")
    result = run("print", "--dialect", "modelmil", "odd.pb", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.strip() == f"odd.pb: error: {REFUSED['float_bit_patterns']}"


def test_cli_reports_a_bad_model_mil_with_its_place(tmp_path):
    (tmp_path / "model.mil").write_text(BASE.replace("<ios17>", "<ios19>"), encoding="utf-8")
    result = run("print", "model.mil", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.startswith("model.mil:3:15: error: unknown opset 'ios19'")


def test_cli_refuses_a_folder_without_model_mil(tmp_path):
    (tmp_path / "Empty.mlmodelc").mkdir()
    result = run("print", "Empty.mlmodelc", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert "Empty.mlmodelc: error: a folder without model.mil" in result.stderr
