"""`miltext check` on deliberately broken programs: tests/check_cases/*.mil.

Each case file is a program that parses; its comments say which diagnostics `check` must
report, next to the line that causes them, in the style of MLIR's -verify-diagnostics:

    %a: (2, fp32) = add(x=%x, y=%w, name="a")  # expected-error {{%w is not defined}}
    # expected-note@-1 {{first defined here}}
    # expected-warning@+1 {{is defined twice}}

- `expected-error`, `expected-warning` or `expected-note`, then `{{text}}`: a diagnostic of
  that severity on this line whose message contains `text`. Notes count as diagnostics of
  their own; a note with no place of its own (advice) counts on its diagnostic's line.
- `@+N` / `@-N` right after the severity: the line N below / above the comment instead.
- Several expectations may share a line, and the same one may be written twice for two
  diagnostics.
- A model section before the program is checked against it.
- `# check-weights: PATH` anywhere in the file: check blob values against the weights folder
  (or file) at PATH, relative to the case file.
- `# check-needs: coremltools`: the case is about coremltools' inference, and is skipped where
  coremltools (an optional extra) is not installed.

The test passes when the reported diagnostics and the expectations match one to one (no
diagnostic unexpected, no expectation unmet). Every rule `check` has must be exercised by some
case, so a new rule comes with its cases.
"""
import importlib.util
import os
import re
from collections import Counter

import pytest

import miltext
from miltext.checker import RULES
from miltext.text.dialects import parse

CASES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "check_cases")
CASE_FILES = sorted(f for f in os.listdir(CASES) if f.endswith(".mil"))

_EXPECTATION = re.compile(r"expected-(error|warning|note)(?:@([+-]\d+))?\s*\{\{(.*?)\}\}")
_WEIGHTS = re.compile(r"#\s*check-weights:\s*(\S+)")
_NEEDS = re.compile(r"#\s*check-needs:\s*(\S+)")
HAVE = {"coremltools": importlib.util.find_spec("coremltools") is not None}


def expectations(text: str) -> list[tuple[str, int, str]]:
    out = []
    for number, line in enumerate(text.split("\n"), 1):
        comment = line.find("#")
        if comment < 0:
            continue
        for severity, offset, message in _EXPECTATION.findall(line[comment:]):
            out.append((severity, number + int(offset or 0), message))
    return out


def reported(diagnostics) -> list[tuple[str, int, str]]:
    out = []
    for d in diagnostics:
        out.append((d.severity, d.line, d.message))
        out.extend(("note", n.line if n.line is not None else d.line, n.message) for n in d.notes)
    return out


def unmatched(expected: list, found: list) -> tuple[list, list]:
    """Pairs each expectation with a diagnostic of its severity and line whose message holds
    its text; returns the expectations and diagnostics left over."""
    left = list(found)
    missing = []
    for severity, line, text in expected:
        for i, (s, l, message) in enumerate(left):
            if s == severity and l == line and text in message:
                del left[i]
                break
        else:
            missing.append((severity, line, text))
    return missing, left


def run_case(name: str):
    path = os.path.join(CASES, name)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    weights = _WEIGHTS.search(text)
    weights = os.path.join(CASES, weights.group(1)) if weights else None
    section, program = parse(text, path, with_model=True)
    return text, miltext.check(program, filename=path, source=text, weights=weights, section=section)


def needs(name: str) -> list:
    with open(os.path.join(CASES, name), encoding="utf-8") as f:
        return [n for n in _NEEDS.findall(f.read()) if not HAVE.get(n)]


RUNNABLE = [name for name in CASE_FILES if not needs(name)]


@pytest.mark.parametrize("name", CASE_FILES)
def test_case_reports_exactly_what_it_expects(name):
    if needs(name):
        pytest.skip(f"needs {', '.join(needs(name))}")
    text, diagnostics = run_case(name)
    missing, unexpected = unmatched(expectations(text), reported(diagnostics))
    assert not missing and not unexpected, f"expected but not reported: {missing}\n" \
                                           f"reported but not expected: {unexpected}"


def test_cases_exercise_every_rule():
    seen = Counter(d.rule for name in RUNNABLE for d in run_case(name)[1])
    untestable = set() if HAVE["coremltools"] else {"coremltools-inference"}
    assert set(RULES) - set(seen) - untestable == set()


def test_each_rule_reports_with_its_severity():
    for name in RUNNABLE:
        for d in run_case(name)[1]:
            assert d.severity == RULES[d.rule], (d.rule, d.message)


def test_harness_reads_offsets_and_several_expectations():
    text = "a  # expected-error {{one}} expected-note@+2 {{two}}\n# expected-warning@-1 {{three}}\n"
    assert expectations(text) == [("error", 1, "one"), ("note", 3, "two"), ("warning", 1, "three")]
    missing, left = unmatched([("error", 1, "on")], [("error", 1, "one"), ("error", 2, "x")])
    assert missing == [] and left == [("error", 2, "x")]


def test_docs_describe_every_rule_with_its_severity():
    with open(os.path.join(os.path.dirname(CASES), "..", "docs", "check.md"), encoding="utf-8") as f:
        rows = dict(re.findall(r"^\| `([a-z-]+)` \| (error|warning) \|", f.read(), re.M))
    assert rows == RULES
