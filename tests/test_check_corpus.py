"""`check` on the real corpus.

- Every program (coremltools and edge cases), printed canonically and parsed back, checks with
  no error; with its weight file when the corpus has its .mlpackage, so blob offsets are checked
  against real weight files too. Warnings are allowed. The edge cases are synthetic corners of
  the proto, and those that Core ML cannot load (an unknown op, a name defined twice) get the
  errors `build` refuses them with, and no other.
- Each coremltools print that parses reports as errors exactly the references the print leaves
  dangling, and nothing else. Which those are is worked out from the .pb, not from scopes: a
  reference dangles where the .pb binds the output of a const op (the print never shows const
  ops) or a value written in place (an iOS16 constexpr attribute, a value binding), which the
  print shows as a name it never defines.
"""
import os
import re
from collections import Counter

import pytest

import miltext
from support.corpus import case_id, print_cases, print_quirks, proto_cases


def read(path, mode="rb"):
    with open(path, mode) as f:
        return f.read()


def package_of(pb_path):
    package = pb_path[:-len(".pb")] + ".mlpackage"
    return package if os.path.isdir(package) else None


@pytest.mark.parametrize("path", proto_cases(), ids=case_id)
def test_canonical_text_of_every_corpus_program_checks_without_errors(path):
    text = miltext.dumps(miltext.Program.from_proto(read(path)))
    program = miltext.loads(text, path)
    diagnostics = miltext.check(program, filename=path, source=text, weights=package_of(path))
    errors = [d for d in diagnostics if d.is_error]
    if "/edge/" in path:
        assert {d.rule for d in errors} <= UNLOADABLE, [d.message for d in errors]
        assert bool(errors) == (_defines_twice(program) or _has_unknown_op(program))
    else:
        assert errors == []
    assert all(d.severity in ("warning", "error") for d in diagnostics)


UNLOADABLE = {"unknown-op", "redefinition"}


def _ops(program):
    for fn in program.functions.values():
        for top in fn.blocks.values():
            for block in _blocks(top):
                yield fn, block.operations


def _defines_twice(program) -> bool:
    """Whether some block defines a name its function already has (its inputs, or an op
    output in the same block)."""
    for fn, operations in _ops(program):
        names = [v.name for v in fn.inputs] + [v.name for op in operations for v in op.outputs]
        if len(names) != len(set(names)):
            return True
    return False


def _has_unknown_op(program) -> bool:
    """Whether an op's type is in no opset of coremltools' table."""
    from miltext import ops
    known = ops.table()["ops"]
    return any(op.type not in known for _, operations in _ops(program) for op in operations)


def test_weight_files_of_the_corpus_are_checked():
    """The clean result above covers blob offsets: moving one makes the check fail."""
    path = os.path.join(os.path.dirname(__file__), "corpus", "coremltools", "const_dtype_zoo_ios17.pb")
    text = miltext.dumps(miltext.Program.from_proto(read(path)))
    assert "(blob)" in text   # the first blob, at the offset the layout implies: 64
    broken = text.replace("(blob)", "(blob(65))", 1)
    diagnostics = miltext.check(miltext.loads(broken), source=broken, weights=package_of(path))
    assert [d.rule for d in diagnostics if d.is_error] == ["blob-range"]


PRINTS = [p for p in print_cases() if "python_object_repr" not in print_quirks(p)]


def _blocks(block):
    yield block
    for op in block.operations:
        for inner in op.blocks:
            yield from _blocks(inner)


def _proto_facts(pb):
    """Per function: the names const ops define, and the ops by op name."""
    consts, ops = {}, {}
    for fn_name, fn in pb.functions.items():
        consts[fn_name] = set()
        for top in fn.blocks.values():
            for block in _blocks(top):
                for op in block.operations:
                    ops[(fn_name, op.name)] = op
                    if op.type == "const":
                        consts[fn_name].update(v.name for v in op.outputs)
    return consts, ops


def _dangles(name, key, index, proto_op, consts) -> bool:
    if proto_op is not None:
        if key in proto_op.attributes:
            return True
        bindings = proto_op.inputs.get(key)
        if bindings is not None and index < len(bindings):
            bound = bindings[index]
            return not isinstance(bound, str) or bound in consts
    return name in consts


def expected_dangling(printed, pb) -> Counter:
    """(name, line) of each reference the print leaves dangling; line None for block outputs."""
    consts, proto_ops = _proto_facts(pb)
    out = Counter()
    for fn_name, fn in printed.functions.items():
        for block in _blocks(fn.block):
            for op in block.operations:
                proto_op = proto_ops.get((fn_name, op.name))
                for key, bindings in op.inputs.items():
                    for index, b in enumerate(bindings):
                        if isinstance(b, str) and _dangles(b, key, index, proto_op, consts[fn_name]):
                            out[(b, op.loc[0])] += 1
            out.update((name, None) for name in block.outputs if name in consts[fn_name])
    return out


_REFERENCE = re.compile(r"%([^\s,()]+)")


def reported_dangling(diagnostics, text) -> Counter:
    """(name, line) of each error, the name read from the source at its caret."""
    lines = text.split("\n")
    out = Counter()
    for d in diagnostics:
        assert d.rule in ("undefined-name", "undefined-output"), (d.line, d.message)
        at_caret = _REFERENCE.match(lines[d.line - 1], d.column - 1)
        assert at_caret, (d.line, d.column, d.message)
        out[(at_caret.group(1), d.line if d.rule == "undefined-name" else None)] += 1
    return out


@pytest.mark.parametrize("path", PRINTS, ids=case_id)
def test_coremltools_print_reports_exactly_the_references_it_leaves_dangling(path):
    text = read(path, "r")
    printed = miltext.loads(text, path)
    pb = miltext.Program.from_proto(read(path.split(".pymil")[0] + ".pb"))
    errors = [d for d in miltext.check(printed, filename=path, source=text) if d.is_error]
    # A print may show one name for several inputs (sdpa_ios18's q, k and v all print as %v):
    # each definition after the first is an error of its own, as build would refuse it.
    again = [d for d in errors if d.rule == "redefinition"]
    assert Counter(_DEFINED.match(text.split("\n")[d.line - 1], d.column - 1).group(1)
                   for d in again) == _repeats(printed)
    others = [d for d in errors if d.rule != "redefinition"]
    assert reported_dangling(others, text) == expected_dangling(printed, pb)


def _repeats(program) -> Counter:
    """Each name a function defines more than once, with the number of definitions after the first."""
    out = Counter()
    for fn, operations in _ops(program):
        names = Counter([v.name for v in fn.inputs] + [v.name for op in operations for v in op.outputs])
        out.update({name: n - 1 for name, n in names.items() if n > 1})
    return out


_DEFINED = re.compile(r"%([^\s,():]+)")


def test_the_prints_do_leave_references_dangling():
    """The test above is not vacuous: most prints lose consts, some in iOS16 attributes."""
    losing = [p for p in PRINTS
              if expected_dangling(miltext.loads(read(p, "r")), miltext.Program.from_proto(
                  read(p.split(".pymil")[0] + ".pb")))]
    assert len(losing) > len(PRINTS) // 2
