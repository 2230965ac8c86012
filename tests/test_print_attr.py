"""coremltools' print(print_attr=True) form, which writes each op's scopes after its type
(`relu[ScopeSource.X: ['fc']](...)`, `add[](...)`): it parses, and the scopes, which the proto
has no place for, are left out: the program is the one the plain print gives."""
import os

import pytest

import miltext

ct = pytest.importorskip("coremltools")
from coremltools.converters.mil import Builder as mb  # noqa: E402
from coremltools.converters.mil.frontend.milproto.load import load_mil_proto  # noqa: E402
from coremltools.converters.mil.mil.scope import ScopeInfo, ScopeSource  # noqa: E402

from support.corpus import corpus_files, manifest  # noqa: E402

CASES = manifest()


def _loads_without_weights(path) -> bool:
    case = CASES.get(os.path.basename(path)[:-3], {})
    return case.get("reload_ok") and not case["proto"]["blob_values"]


PROGRAMS = [p for p in corpus_files("coremltools", ".pb") if _loads_without_weights(p)]


def without_places(program) -> str:
    """The program as text: equal texts, equal programs (the source places aside)."""
    return miltext.dumps(program)


def both_prints(prog) -> tuple[str, str]:
    return str(prog), prog.__str__(print_attr=True)


def scoped_program():
    @mb.program(input_specs=[mb.TensorSpec(shape=(2, 3))])
    def prog(x):
        with mb.scope(ScopeInfo(source=ScopeSource.TORCHSCRIPT_MODULE_TYPE, data=["Linear", "relu"]),
                      ScopeInfo(source=ScopeSource.TORCHSCRIPT_MODULE_NAME, data=["fc.0", "act]["])):
            y = mb.relu(x=x, name="r")
        return mb.add(x=y, y=1.0, name="out")
    return prog


def test_the_corpus_has_programs_coremltools_reads():
    assert len(PROGRAMS) > 20


@pytest.mark.parametrize("path", PROGRAMS, ids=os.path.basename)
def test_print_attr_form_reads_as_the_plain_print(path):
    version = CASES[os.path.basename(path)[:-3]]["specification_version"]
    prog = load_mil_proto(ct.proto.MIL_pb2.Program.FromString(open(path, "rb").read()), version)
    plain, with_scopes = both_prints(prog)
    # a loaded program's ops have empty scope lists: the prints differ by those alone
    assert with_scopes.replace("[](", "(") == plain
    assert without_places(miltext.loads(with_scopes)) == without_places(miltext.loads(plain))


def test_scopes_with_names_and_brackets_in_strings():
    plain, with_scopes = both_prints(scoped_program())
    assert "relu[ScopeSource.TORCHSCRIPT_MODULE_TYPE: ['Linear', 'relu']" in with_scopes
    assert "'act]['" in with_scopes
    program = miltext.loads(with_scopes)
    assert without_places(program) == without_places(miltext.loads(plain))
    assert [op.type for op in program.functions["main"].block.operations] == ["relu", "add"]


def test_a_block_opset_is_still_an_opset():
    text = ("main[CoreML7](%x: (2, fp32)) {\n  block0[CoreML7]() {\n"
            "    %y: (2, fp32) = relu[](x=%x, name=\"y\")\n  } -> (%y)\n}\n")
    program = miltext.loads(text)
    assert list(program.functions["main"].blocks) == ["CoreML7"]


def test_an_unclosed_scope_list_is_an_error():
    text = ("main[CoreML7](%x: (2, fp32)) {\n  block0() {\n"
            "    %y: (2, fp32) = relu[ScopeSource.X: ['a'](x=%x, name=\"y\")\n  } -> (%y)\n}\n")
    with pytest.raises(miltext.ParseError) as e:
        miltext.loads(text)
    assert e.value.line == 3
