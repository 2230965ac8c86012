"""Every real program of the corpus: proto → text → proto gives the same bytes, printing is a
fixed point, and every coremltools print parses into the program it was printed from."""

import pytest

import miltext
from miltext.ir import DictType, ListType
from support.corpus import case_id, print_cases, print_quirks, proto_cases


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


@pytest.mark.parametrize("path", proto_cases(), ids=case_id)
def test_proto_object_model_proto_is_byte_identical(path):
    data = read(path)
    assert miltext.Program.from_proto(data).to_proto().SerializeToString(deterministic=True) == data


@pytest.mark.parametrize("path", proto_cases(), ids=case_id)
def test_proto_text_proto_is_byte_identical(path):
    data = read(path)
    text = miltext.dumps(miltext.Program.from_proto(data))
    assert miltext.loads(text).to_proto().SerializeToString(deterministic=True) == data


@pytest.mark.parametrize("path", proto_cases(), ids=case_id)
def test_printing_is_a_fixed_point(path):
    text = miltext.dumps(miltext.Program.from_proto(read(path)))
    assert miltext.dumps(miltext.loads(text)) == text


def _shown(t):
    """A type as coremltools' print shows it: a list's length always `?`, a dict's key and
    value types not at all."""
    if isinstance(t, ListType):
        return ("list", _shown(t.element))
    if isinstance(t, DictType):
        return ("dict",)
    return t


def _structure(program):
    """What a coremltools print shows of a program: functions, inputs, non-const ops (state
    ops print merged, so they are left out too)."""
    def decls(vs):
        return [(v.name, _shown(v.type)) for v in vs]

    def block(b):
        ops = [(op.type, decls(op.outputs), [block(x) for x in op.blocks])
               for op in b.operations if op.type not in ("const", "read_state", "write_state", "coreml_update_state")]
        return decls(b.inputs), ops, b.outputs

    return {name: (fn.opset, decls(fn.inputs), block(fn.block)) for name, fn in program.functions.items()}


@pytest.mark.parametrize("path", print_cases(), ids=case_id)
def test_coremltools_print_parses(path):
    text = read(path, "r")
    if "python_object_repr" in print_quirks(path):
        with pytest.raises(miltext.ParseError) as info:
            miltext.loads(text, path)
        assert info.value.line >= 1 and info.value.column >= 1
        assert "object at 0x" in info.value.source_line
        return
    program = miltext.loads(text, path)
    assert program.functions


@pytest.mark.parametrize("path", [p for p in print_cases()
                                  if p.endswith(".pymil.txt") and "python_object_repr" not in print_quirks(p)],
                         ids=case_id)
def test_coremltools_print_has_the_structure_of_its_proto(path):
    pb = path.replace(".pymil.txt", ".pb")
    expected = miltext.Program.from_proto(read(pb))
    parsed = miltext.loads(read(path, "r"), path)
    # The print loses what the proto does not show: const ops; and it spells unknown dims as
    # symbols, which read back as unknown dims, so types compare equal.
    assert _structure(parsed) == _structure(expected)
