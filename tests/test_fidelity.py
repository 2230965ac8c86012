"""Nothing of a real file is lost or changed on its way through miltext (issue 27):

- a model.mil keeps the header version and the ending it was read with, and every Apple-written
  file prints back byte for byte, with a final newline or without;
- every name the parsers accept prints in both dialects, and a name model.mil cannot write is
  refused by its parser in the printer's words.
"""
import os
import re

import pytest

import miltext
from miltext.ir import Block, Function, Operation, Program, TensorType, Value, Var
from miltext.text import lexemes
from miltext.text.modelmil import words
from miltext.text.modelmil.printer import print_modelmil
from support.corpus import case_id, corpus_files, proto_cases

APPLE_FILES = corpus_files("modelmil", ".mil") + corpus_files("wild", ".mil")
GRAMMARS = os.path.join(os.path.dirname(__file__), "..", "grammar")


def read(path: str) -> str:
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()


def proto_bytes(program) -> bytes:
    return program.to_proto().SerializeToString(deterministic=True)


# ---- the header version and the ending ----------------------------------------------------------

@pytest.mark.parametrize("ending", ["", "\n", "\r\n", "\n\n"])
@pytest.mark.parametrize("path", APPLE_FILES, ids=case_id)
def test_an_apple_file_prints_back_byte_for_byte_whatever_its_ending(path, ending):
    text = read(path).rstrip("\n") + ending
    assert miltext.dumps(miltext.loads(text), dialect="modelmil") == text


@pytest.mark.parametrize("path", APPLE_FILES, ids=case_id)
def test_the_command_line_prints_an_apple_file_back_byte_for_byte(path, tmp_path, capfdbinary):
    from miltext.cli import main
    for ending in ("", "\n"):
        copy = tmp_path / f"model{len(ending)}.mil"
        copy.write_bytes(read(path).encode("utf-8") + ending.encode())
        assert main(["print", "--dialect", "modelmil", str(copy)]) in (0, None)
        assert capfdbinary.readouterr().out == copy.read_bytes()


@pytest.mark.parametrize("version", ["1.0", "1.3"])
def test_the_version_read_is_kept_whatever_the_rule_says(version):
    """A 3520 compiler's file in program(1.0) (as 38 in tests/corpus/wild is) keeps 1.0, and an
    old compiler's file in 1.3 keeps 1.3; a program from the proto takes the rule."""
    text = read(APPLE_FILES[0])  # coremlc 3402, program(1.0)
    forced = print_modelmil(miltext.loads(text), version)
    program = miltext.loads(forced)
    assert program.modelmil_version == version
    assert miltext.dumps(program, dialect="modelmil") == forced
    assert miltext.dumps(Program.from_proto(proto_bytes(program)), dialect="modelmil").startswith("program(1.0)\n")


def test_the_version_and_ending_are_not_part_of_the_program_value():
    text = read(APPLE_FILES[0])
    a, b = miltext.loads(text), miltext.loads(text.replace("program(1.0)", "program(1.3)", 1) + "\n")
    assert (a.modelmil_version, b.modelmil_version, a.modelmil_ending, b.modelmil_ending) == ("1.0", "1.3", "", "\n")
    assert a == b and proto_bytes(a) == proto_bytes(b)


def test_a_version_the_printer_cannot_spell_takes_the_rule():
    text = read(APPLE_FILES[0]).replace("program(1.0)", "program(1)", 1)
    program = miltext.loads(text)
    assert program.modelmil_version == "1"
    assert miltext.dumps(program, dialect="modelmil") == read(APPLE_FILES[0])


# ---- names ------------------------------------------------------------------------------------

def _corpus_names() -> set:
    names = set()

    def walk(block):
        names.update(v.name for v in block.inputs)
        for op in block.operations:
            names.add(op.type)
            names.update(op.inputs)
            names.update(op.attributes)
            names.update(v.name for v in op.outputs)
            for nested in op.blocks:
                walk(nested)

    programs = [Program.from_proto(open(p, "rb").read()) for p in proto_cases()]
    programs += [miltext.loads(read(p)) for p in APPLE_FILES]
    for program in programs:
        names.update(program.functions)
        names.update(program.attributes)
        for fn in program.functions.values():
            names.update(v.name for v in fn.inputs)
            names.update(fn.attributes)
            for block in fn.blocks.values():
                walk(block)
    return names


def _grammar_words() -> set:
    found = set()
    for name in ("mil.lark", "modelmil.lark"):
        with open(os.path.join(GRAMMARS, name), encoding="utf-8") as f:
            found.update(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', f.read()))
    return found | set(lexemes.KEYWORDS) | set(words.KEYWORDS) | {"block", "BLOBFILE"}


NAMES = sorted(_corpus_names() | _grammar_words())
POSITIONS = ("function", "input var", "output var", "op type", "input key", "attribute key")
FP = TensorType("fp32", (2,))


def _program(name: str, position: str) -> Program:
    """A small program with `name` in one position and plain names elsewhere."""
    def at(where, plain):
        return name if position == where else plain
    x, y = at("input var", "x"), at("output var", "y")
    op = Operation(type=at("op type", "relu"), inputs={at("input key", "x"): [x]}, outputs=[Var(y, FP)],
                   attributes={at("attribute key", "tag"): Value.tensor("t")})
    block = Block(outputs=[y], operations=[op])
    return Program(functions={at("function", "main"): Function(inputs=[Var(x, FP)], opset="CoreML7",
                                                               blocks={"CoreML7": block})})


def test_the_names_cover_the_corpus_and_both_grammars():
    assert len(NAMES) > 1500
    assert {"block", "fp32", "program", "func", "List", "unknown", "BLOBFILE", "tensor"} <= set(NAMES)


@pytest.mark.parametrize("position", POSITIONS)
def test_every_name_prints_in_miltext_text_and_reads_back(position):
    for name in NAMES:
        program = _program(name, position)
        assert miltext.loads(miltext.dumps(program)) == program, (name, position)


@pytest.mark.parametrize("position", POSITIONS)
def test_every_name_prints_in_model_mil_or_both_sides_refuse_it_in_the_same_words(position):
    placeholder = "PLACEHOLDER_NAME"
    template = miltext.dumps(_program(placeholder, position), dialect="modelmil")
    refused = []
    for name in NAMES:
        program = _program(name, position)
        problem = words.name_problem(name)
        if problem is None:
            text = miltext.dumps(program, dialect="modelmil")
            back = miltext.loads(text)
            assert proto_bytes(back) == proto_bytes(program), (name, position)
            assert miltext.dumps(back, dialect="modelmil") == text
            continue
        refused.append(name)
        with pytest.raises(miltext.ProgramError) as printing:
            miltext.dumps(program, dialect="modelmil")
        assert f"model.mil cannot express {problem}" in str(printing.value)
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):  # a word the lexer reads as a name
            with pytest.raises(miltext.ParseError) as parsing:
                miltext.loads(re.sub(rf"\b{placeholder}\b", name, template))
            assert f"model.mil cannot express {problem}" in str(parsing.value), (name, position)
    assert "block" not in refused and {"fp32", "tensor", "state"} <= set(refused)


def test_block_is_a_name_but_not_the_type_of_an_op_without_outputs():
    text = miltext.dumps(_program("block", "output var"), dialect="modelmil")
    assert "tensor<fp32, [2]> block = relu(x = x)" in text
    assert miltext.dumps(miltext.loads(text), dialect="modelmil") == text
    program = _program("block", "op type")
    program.functions["main"].block.operations[0].outputs.clear()
    with pytest.raises(miltext.ProgramError, match="the op type 'block' on an op without outputs"):
        miltext.dumps(program, dialect="modelmil")


# ---- opsets ----------------------------------------------------------------------------------

COREMLTOOLS_OPSETS = {"CoreML3": "iOS13", "CoreML4": "iOS14", "CoreML5": "iOS15", "CoreML6": "iOS16",
                      "CoreML7": "iOS17", "CoreML8": "iOS18", "CoreML9": "iOS26"}  # coremltools 9's _OPSET


def _check(text: str):
    from miltext.checker import check
    return check(miltext.loads(text))


@pytest.mark.parametrize("opset", sorted(COREMLTOOLS_OPSETS))
def test_every_opset_coremltools_has_is_known_and_its_ops_are_checked(opset):
    from miltext import ops
    assert ops.table()["opsets"][opset] == COREMLTOOLS_OPSETS[opset]
    text = (f"main[{opset}](%x: (2, fp32)) {{\n  block0() {{\n"
            f"    %y: (2, fp32) = relu(x=%x, name=\"y\")\n    %z: (2, fp32) = relu(xx=%y, name=\"z\")\n"
            f"  }} -> (%z)\n}}\n")
    messages = [d.message for d in _check(text)]
    assert not any("opset" in m for m in messages), messages
    assert any("relu has no input 'xx'" in m for m in messages)
    program = miltext.loads(text)
    modelmil = miltext.dumps(program, dialect="modelmil")
    assert f"func main<{COREMLTOOLS_OPSETS[opset].lower()}>" in modelmil
    assert miltext.loads(modelmil) == program


def test_an_op_an_opset_lacks_is_named_with_the_opset_that_added_it():
    text = ("main[CoreML3](%x: (2, fp32)) {\n  block0() {\n"
            "    %y: (2, fp32) = silu(x=%x, name=\"y\")\n  } -> (%y)\n}\n")
    assert not [d for d in _check(text) if "silu" in d.message]  # silu is an iOS 13 op
    from miltext import ops
    added = {o for o in ops.table()["ops"] if ops.variant(o, "CoreML5") and not ops.variant(o, "CoreML4")}
    assert added  # iOS 15 added ops that CoreML3 and CoreML4 do not have
    op = sorted(added)[0]
    messages = [d.message for d in _check(text.replace("silu(x=%x", f"{op}(x=%x"))]
    assert any(op in m and "CoreML5" in m for m in messages), messages


# ---- coremltools' prints of every era: symbolic dims ------------------------------------------

@pytest.mark.parametrize("dim", ["s0", "is0", "is12", "3*is0", "is0 + 1", "1 - is0", "-is0", "is0**2", "is0/2",
                                 "Max(1, is0)", "floor(is0/2)", "Mod(is0, 2)", "2*floor(is0/2) + 1"])
def test_a_symbolic_dim_of_any_coremltools_print_reads_as_an_unknown_dim(dim):
    """coremltools 4 to 9 print unknown dims as sympy text: `s0` (its early symbols), `is0`, and
    arithmetic over them in a shape or a value known only by symbols."""
    text = (f"main(%x: (1, {dim}, fp32)(Tensor)) {{\n  block0() {{\n"
            f"    %y: ({dim},fp32)(Tensor) = relu(x=%x, name=\"y\")\n"
            f"    %s: (2,int32)^(Tensor) = shape(x=%x, name=\"s\")\n"
            f"  }} -> (%y)\n}}\n")
    program = miltext.loads(text)
    fn = program.functions["main"]
    assert fn.inputs[0].type == TensorType("fp32", (1, None))
    assert fn.blocks[fn.opset].operations[0].outputs[0].type == TensorType("fp32", (None,))


# ---- fields this schema does not know ----------------------------------------------------------

# One unknown field of each wire type, numbered past every field MIL.proto has: a varint, a
# length-delimited field, a fixed64 and a fixed32 (tags of fields 100 to 103).
UNKNOWN = {"varint": bytes([0xA0, 0x06, 0x96, 0x01]), "bytes": bytes([0xAA, 0x06, 0x03]) + b"new",
           "fixed64": bytes([0xB1, 0x06]) + bytes(range(8)), "fixed32": bytes([0xBD, 0x06, 1, 2, 3, 4])}


def _messages(msg, kinds: dict) -> None:
    """The first message of each kind in `msg` (Program, Function, Block, Operation, ...)."""
    from miltext.ir.unknown import parts
    kinds.setdefault(msg.DESCRIPTOR.name, msg)
    for _, part in parts(msg):
        _messages(part, kinds)


INJECTED_CASES = ["coremltools/activations.pb", "coremltools/cond_basic.pb", "coremltools/cast_all_dtypes.pb",
                  "coremltools/const_dtype_zoo_ios17.pb"]


@pytest.mark.parametrize("case", INJECTED_CASES)
@pytest.mark.parametrize("wire", sorted(UNKNOWN))
def test_unknown_fields_in_every_kind_of_message_survive_proto_text_proto(case, wire):
    from miltext.proto import schema
    from support.corpus import CORPUS
    msg = schema.Program.FromString(open(os.path.join(CORPUS, case), "rb").read())
    kinds: dict = {}
    _messages(msg, kinds)
    assert {"Program", "Function", "Block", "Operation", "Argument", "Value", "ValueType",
            "TensorType", "NamedValueType"} <= set(kinds)
    for m in kinds.values():
        m.MergeFromString(UNKNOWN[wire])
    data = msg.SerializeToString(deterministic=True)
    program = Program.from_proto(data)
    assert len(program.unknown_fields) == len(kinds)
    text = miltext.dumps(program)
    assert "unknownFields=" in text
    back = miltext.loads(text)
    assert back == program
    assert back.to_bytes() == data and back.to_proto().SerializeToString(deterministic=True) == data
    from miltext.text.mil.fastprint import proto_text
    assert proto_text(data) == text  # the C printer leaves such a program to the Python one


def test_check_warns_of_unknown_fields_and_model_mil_refuses_them():
    from miltext.checker import check
    from miltext.proto import schema
    from support.corpus import CORPUS
    msg = schema.Program.FromString(open(os.path.join(CORPUS, "coremltools", "activations.pb"), "rb").read())
    msg.MergeFromString(UNKNOWN["varint"])
    program = Program.from_proto(msg.SerializeToString(deterministic=True))
    assert [d.message for d in check(program) if "does not know" in d.message]
    with pytest.raises(miltext.ProgramError, match="fields this schema does not know"):
        miltext.dumps(program, dialect="modelmil")
    assert not [d for d in check(Program.from_proto(open(os.path.join(CORPUS, "coremltools", "activations.pb"),
                                                         "rb").read())) if "does not know" in d.message]


@pytest.mark.parametrize("header,message", [
    ('unknownFields=Dict[(string), (?, uint8)]({"[\\"nowhere\\"]": [160, 6, 1]})', "'nowhere' is no message field"),
    ('unknownFields=Dict[(string), (?, uint8)]({"[]": [8, 1]})', "fields this schema knows (version)"),
    ('unknownFields=Dict[(string), (?, uint8)]({"[]": [255]})', "not protobuf fields"),
    ('unknownFields=Dict[(string), (?, uint8)]({"[\\"functions\\", \\"f\\"]": [160, 6, 1]})', 'functions has no "f"'),
])
def test_unknown_fields_that_do_not_fit_are_an_error_not_a_crash(header, message):
    text = f"program(version=1, {header})\n\nmain[CoreML7](%x: (2, fp32)) {{\n  block0() {{\n  }} -> (%x)\n}}\n"
    with pytest.raises(miltext.ProgramError, match=re.escape(message)):
        miltext.loads(text).to_bytes()


def test_unknown_fields_of_the_wrong_type_are_a_parse_error():
    text = 'program(version=1, unknownFields="x")\n'
    with pytest.raises(miltext.ParseError, match="unknownFields is Dict"):
        miltext.loads(text)


@pytest.mark.parametrize("code", [-1, 99])
def test_check_reports_a_dtype_code_that_is_not_a_dtype(code):
    from miltext.checker import check
    from miltext.proto import schema
    from support.corpus import CORPUS
    data = open(os.path.join(CORPUS, "coremltools", "activations.pb"), "rb").read()
    assert not check(Program.from_proto(data))
    msg = schema.Program.FromString(data)
    block = msg.functions["main"].block_specializations["CoreML7"]
    block.operations[0].attributes["name"].type.tensorType.dataType = code
    messages = [d.message for d in check(Program.from_proto(msg.SerializeToString(deterministic=True)))]
    assert f"relu has a value or var of dtype code {code}, which is not a dtype" in messages


# ---- third-party files, and a text cut inside a number --------------------------------------------

WILD_README = os.path.join(os.path.dirname(__file__), "corpus", "wild", "README.md")
PERMITTING = {"MIT", "Apache-2.0", "BSD-3-Clause", "MIT OR Apache-2.0", "own"}


def test_every_wild_file_has_a_row_with_a_licence_that_allows_copying_it():
    """tests/corpus/wild holds third-party files only under a licence that lets us redistribute
    them; a file written here instead says so ("own")."""
    rows = {}
    for line in read(WILD_README).split("\n"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 4 and cells[0].endswith((".mil", ".txt")):
            rows[cells[0]] = cells[3]
    files = sorted(f for f in os.listdir(os.path.dirname(WILD_README)) if f != "README.md")
    assert sorted(rows) == files
    assert {name: licence for name, licence in rows.items() if licence not in PERMITTING} == {}


def _shared_apple_files() -> list:
    """The Apple-written files of ../shared/corpus (the originals of files this project may not
    copy), when the shared folder is beside the project."""
    shared = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "corpus")
    return [os.path.join(shared, folder, f) for folder in ("modelmil", "wild")
            if os.path.isdir(os.path.join(shared, folder))
            for f in sorted(os.listdir(os.path.join(shared, folder))) if f.endswith(".mil")]


def test_every_apple_file_here_and_beside_the_project_prints_back_byte_for_byte():
    changed = [p for p in APPLE_FILES + _shared_apple_files()
               if miltext.dumps(miltext.loads(read(p)), dialect="modelmil") != read(p)]
    assert changed == []


@pytest.mark.parametrize("number", ["-0x1.4cp-3", "0x0p+0", "-0x1.8p+1", "0x1p-6"])
@pytest.mark.parametrize("dialect", ["modelmil", "mil"])
def test_a_text_cut_inside_a_number_ends_short_at_its_end(number, dialect):
    """A number cut anywhere (-0x1.4cp-, -0x1., -) is the end of the text coming too soon, told at
    the end, not a bracket left open or a stray character."""
    if dialect == "modelmil":
        head = ("program(1.3)\n{\n    func main<ios17>(tensor<fp32, [2]> x) {\n"
                "            tensor<fp32, [2, 2]> w = const()[val = tensor<fp32, [2, 2]>([[0x1p+0, ")
    else:
        head = "main[CoreML7](%x: (2, fp32)) {\n  block0() {\n    %w: (2, 2, fp32) = const(val=(2, 2, fp32)([[1.0, "
    for cut in range(1, len(number)):
        text = head + number[:cut]
        with pytest.raises(miltext.ParseError) as info:
            miltext.loads(text, "cut.mil")
        assert info.value.errors == [(text.count("\n") + 1, len(text.split("\n")[-1]) + 1, info.value.message)]
        assert info.value.message.startswith("unexpected end of text"), (text[-20:], info.value.message)
