"""Compact operations (miltext.ir.compact), which the language server holds: a program read with
the server's ReadOptions (its op factory makes ops compact, blob offsets left to it; and its implied blob offsets then filled in) is the same program as one read
without (equal, the same proto bytes, the same text) for every program of the corpus in both
dialects, and a compact op behaves as an
Operation where a reader or a writer of programs touches it."""
import copy
import dataclasses
import pickle

import pytest

import miltext
from miltext.ir import Block, Operation, Value, Var
from miltext.ir.compact import _ATTRIBUTES, CompactOperation, compact
from miltext.lsp.document import EDITING, editing_whole
from miltext.model.text import parse_model
from miltext.text import blob_layout
from miltext.text.dialects import parse
from miltext.text.modelmil.parser import parse as parse_modelmil
from support.corpus import case_id, corpus_files, proto_cases


def _ops(program):
    stack = [b for fn in program.functions.values() for b in fn.blocks.values()]
    while stack:
        block = stack.pop()
        for op in block.operations:
            yield op
            stack.extend(op.blocks)


def _plain(op) -> bool:
    """An op without blocks whose name, if any, is one string without a doc."""
    name = op.attributes.get("name")
    return not op.blocks and (name is None or (
        name.type == Value.tensor("").type and not name.doc and name.data.field == "strings"
        and len(name.data.values) == 1 and name.type.attributes == {}))


@pytest.mark.parametrize("path", proto_cases(), ids=case_id)
def test_a_compact_reading_is_the_same_program(path):
    with open(path, "rb") as f:
        data = f.read()
    program = miltext.Program.from_proto(data)
    for dialect, reader in (("mil", parse), ("modelmil", parse_modelmil)):
        try:
            text = miltext.dumps(program, dialect)
        except ValueError:   # what model.mil cannot write
            continue
        plain = reader(text)
        # read one op at a time, and as a whole text, whose ops share their small values
        for compacted in (reader(text, options=EDITING), reader(text, options=editing_whole())):
            assert blob_layout.fill_in(compacted) is None
            assert compacted == plain and plain == compacted
            assert compacted.to_bytes() == plain.to_bytes()
            assert miltext.dumps(compacted, dialect) == miltext.dumps(plain, dialect) == text
            for op in _ops(compacted):   # each op is compact but those that cannot be
                assert (type(op) is CompactOperation) == _plain(op), op


@pytest.mark.parametrize("path", corpus_files("modelmil", ".mil"), ids=case_id)
def test_apples_model_mil_reads_the_same_compact(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    plain, compacted = parse_model(text).program, parse_model(text, options=EDITING).program
    assert compacted == plain
    assert compacted.to_bytes() == plain.to_bytes()
    assert any(type(op) is CompactOperation for op in _ops(compacted))


TEXT = '''main[CoreML7](%x: (1, 4, fp32)) {
  block0() {
    %w: (4, fp32) = const(val=[1.0, 2.0, 3.0, 4.0], name="w")
    %y: (1, 4, fp32) = mul(x=%x, y=%w, name="y")
    %c: (2, int32) = concat(values=(%x, %x), axis=0, interleave=false, name="c")
    %l: (1, 4, fp32) = while_loop(loop_vars=(%y))
      block1(%a: (1, 4, fp32)) {
        %b: (1, 4, fp32) = relu(x=%a, name="b")
      } -> (%b)
  } -> (%l)
}
'''


def test_what_is_compact_and_what_stays_ordinary():
    program = parse(TEXT, options=EDITING)
    ops = program.functions["main"].block.operations
    const, mul, concat, loop = ops
    assert [type(op) for op in ops] == [CompactOperation, CompactOperation, CompactOperation, Operation]
    assert type(loop.blocks[0].operations[0]) is CompactOperation   # inside a block too
    assert mul.name == "y" and mul.inputs == {"x": ["x"], "y": ["w"]}
    assert concat.inputs["values"] == ["x", "x"]
    assert list(const.attributes) == ["val", "name"]
    # the Values are the op's own: a change to one is kept
    assert const.attributes["val"] is const.attributes["val"]
    assert mul.outputs[0] is mul.outputs[0]
    assert program == parse(TEXT)


def test_a_const_named_after_its_output_keeps_its_value_only():
    """As exporters write every const: its name is its output's, so the op keeps its value and
    reads the name from the output (no tuple of attributes for each const)."""
    program = parse(TEXT, options=EDITING)
    const = program.functions["main"].block.operations[0]
    assert _ATTRIBUTES.__get__(const) is const.attributes["val"]
    assert const.name == "w" and list(const.attributes) == ["val", "name"]
    assert const.attributes["name"] == Value.tensor("w")
    assert program == parse(TEXT) and miltext.dumps(program) == miltext.dumps(parse(TEXT))
    # named otherwise, or with more attributes: its attributes as they are
    other = parse(TEXT.replace('name="w"', 'name="weights"'), options=EDITING).functions["main"].block.operations[0]
    assert type(other) is CompactOperation and type(_ATTRIBUTES.__get__(other)) is tuple
    assert other.name == "weights" and other.outputs[0].name == "w"


SMALL_VALUES = '''main[CoreML7](%x: (1, 4, fp32)) {
  block0() {
    %a: (1, int32) = const(val=[-1], name="a")
    %b: (1, int32) = const(val=[-1], name="b")
    %c: (1, fp32) = const(val=[-1.0], name="c")
    %e: (fp32) = const(val=1e-05, name="e")
    %f: (fp32) = const(val=1e-05, name="f")
    %s: (1, fp32) = reduce_sum(x=%x, axes=[-1], keep_dims=true, name="s")
    %m: (fp32) = const(val=MODE, name="m")
    %n: (string) = const(val="TANH", name="n")
    %o: (string) = const(val="TANH", name="o")
  } -> (%s)
}
'''


def test_the_ops_of_a_whole_text_share_their_small_values():
    """A model repeats its axes, shapes, epsilons and modes in every layer: the ops of one
    reading share one Value for each (read-only: a change would reach every op holding it)."""
    text = SMALL_VALUES.replace("val=MODE", "val=[" + ", ".join(["0.5"] * 100) + "]").replace("%m: (fp32)", "%m: (100, fp32)")
    program = parse(text, options=editing_whole())
    ops = {op.outputs[0].name: op for op in program.functions["main"].block.operations}
    val = {name: op.attributes["val"] for name, op in ops.items() if op.type == "const"}
    assert val["a"] is val["b"] and val["e"] is val["f"] and val["n"] is val["o"]
    assert ops["s"].inputs["axes"][0] is val["a"]   # a literal input too
    assert val["c"] is not val["a"] and val["c"].type.dtype == "fp32"   # equal bytes, another type
    again = parse(text, options=editing_whole()).functions["main"].block.operations[0]
    assert again.attributes["val"] is not val["a"]    # shared within one reading only
    with pytest.raises(ValueError):
        val["a"].data.values[0] = 2
    m = parse(text, options=editing_whole()).functions["main"].block.operations[6]
    assert m.attributes["val"].data.values.flags.writeable   # a large value is the op's own
    assert program == parse(text) and miltext.dumps(program) == miltext.dumps(parse(text))
    single = parse(text, options=EDITING).functions["main"].block.operations
    assert single[0].attributes["val"] is not single[1].attributes["val"]   # EDITING: none shared


def test_a_compact_op_written_to_becomes_ordinary():
    program = parse(TEXT, options=EDITING)
    block = program.functions["main"].block
    mul = block.operations[1]
    var = mul.outputs[0]
    mul.inputs = {**mul.inputs, "y": ["x"]}
    assert type(mul) is Operation
    assert mul.inputs == {"x": ["x"], "y": ["x"]} and mul.outputs[0] is var and mul.name == "y"
    mul.inputs["x"] = ["w"]    # an ordinary op's dicts are its own
    assert mul.inputs["x"] == ["w"]
    const = block.operations[0]
    const.name = "weights"
    assert type(const) is Operation and const.name == "weights" and list(const.attributes) == ["val", "name"]
    concat = block.operations[2]
    concat.blocks = [Block()]
    assert type(concat) is Operation and len(concat.blocks) == 1


def test_copies_and_replacements_are_ordinary_ops():
    op = parse(TEXT, options=EDITING).functions["main"].block.operations[1]
    assert type(op) is CompactOperation
    for other in (copy.copy(op), copy.deepcopy(op), pickle.loads(pickle.dumps(op)),
                  dataclasses.replace(op)):
        assert type(other) is Operation and other == op
    renamed = dataclasses.replace(op, type="add")
    assert type(renamed) is Operation and renamed.type == "add" and renamed.inputs == op.inputs


def test_only_plain_ops_are_made_compact():
    named = Operation("relu", {"x": ["a"]}, [Var("b")], attributes={"name": Value.tensor(["b", "c"])})
    assert compact(named) is named    # a name that is not one string
    doc = Value.tensor("b")
    doc.doc = "the name"
    with_doc = Operation("relu", {"x": ["a"]}, [Var("b")], attributes={"name": doc})
    assert compact(with_doc) is with_doc
    nameless = compact(Operation("relu", {"x": ["a", None]}, [Var("b"), Var("c")]))
    assert type(nameless) is CompactOperation
    assert nameless.name is None and nameless.attributes == {} and nameless.inputs == {"x": ["a", None]}
    assert [v.name for v in nameless.outputs] == ["b", "c"]
    assert compact(nameless) is nameless


def test_a_compact_program_takes_less_memory():
    import tracemalloc
    text = max((open(p, encoding="utf-8").read() for p in corpus_files("modelmil", ".mil")), key=len)
    sizes = []
    for compacted in (False, True):
        tracemalloc.start()
        program = parse_model(text, options=EDITING if compacted else None).program
        sizes.append(tracemalloc.get_traced_memory()[0])
        tracemalloc.stop()
        del program
    assert sizes[1] < 0.75 * sizes[0], sizes


def test_a_pass_that_writes_into_a_compact_op_fails_loudly():
    """complete() turns `y=1.0` into a const and writes its name into the op's bindings: on a
    compact op those are read afresh each time, so the write would be lost (the const left
    dangling, `add` keeping its literal). It raises instead, and the text is unchanged."""
    text = '''main[CoreML7](%x: (1, fp32)) {
  block0() {
    %y: (1, fp32) = add(x=%x, y=1.0)
  } -> (%y)
}
'''
    from miltext.infer import complete
    program = parse(text, options=EDITING)
    add = program.functions["main"].block.operations[0]
    assert type(add) is CompactOperation
    with pytest.raises(TypeError, match="would be lost"):
        complete(program)
    assert miltext.dumps(program) == text
    for write in (lambda: add.inputs.__setitem__("y", ["x"]), lambda: add.inputs["y"].append("x"),
                  lambda: add.outputs.clear(), lambda: add.attributes.update(name=Value.tensor("y")),
                  lambda: add.blocks.append(Block())):
        with pytest.raises(TypeError, match="would be lost"):
            write()
    assert miltext.dumps(program) == text
    ordinary = parse(text)           # read plain, the same pass names the const and binds it
    complete(ordinary)
    assert miltext.dumps(ordinary).count("y_y_0") == 3


def test_what_a_compact_op_gives_out_is_ordinary_once_copied():
    op = parse(TEXT, options=EDITING).functions["main"].block.operations[1]
    for inputs in (copy.copy(op.inputs), copy.deepcopy(op.inputs), pickle.loads(pickle.dumps(op.inputs))):
        assert type(inputs) is dict and all(type(b) is list for b in inputs.values())
        inputs["x"].append("w")
    replaced = dataclasses.replace(op, type="add")
    replaced.inputs["x"][0] = "w"     # an ordinary op's lists are its own
    assert replaced.inputs["x"] == ["w"] and op.inputs["x"] == ["x"]
