"""Every example in docs/syntax.md (and the README's tour) is real.

- Every ```mil block parses, and is canonical (dumps(loads(block)) == block) unless the line
  before it (blank lines aside) is `<!-- not canonical -->`; a block so marked must really
  differ from its canonical text, so that the mark never goes stale.
- A ```text block marked `<!-- error example: NAME -->` is a program that does not parse; the
  next fenced block is exactly the error miltext reports for it, read from a file named NAME.
- A ```mil block marked `<!-- fmt input -->` is a source file; the next one, marked
  `<!-- fmt output -->`, is exactly what `miltext fmt` makes of it.
"""
import os

import pytest

import miltext
from support.docs import README, fenced_blocks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "syntax.md")

BLOCKS = fenced_blocks(DOC)
MIL = [b for b in BLOCKS if b[1] == "mil" and b[3] not in ("fmt input", "fmt output")]  # see test_fmt_example
ERRORS = [(i, b) for i, b in enumerate(BLOCKS) if b[3].startswith("error example:")]
FMT = [(i, b) for i, b in enumerate(BLOCKS) if b[3] == "fmt input"]


@pytest.mark.parametrize("line,lang,body,mark", [b for b in fenced_blocks(README) if b[1] == "mil"],
                         ids=lambda b: str(b) if isinstance(b, int) else None)
def test_readme_tour_is_canonical(line, lang, body, mark):
    assert miltext.dumps(miltext.loads(body)) == body


def test_the_doc_has_examples():
    assert len(MIL) >= 10
    assert ERRORS


@pytest.mark.parametrize("line,lang,body,mark", MIL, ids=[f"line{b[0]}" for b in MIL])
def test_mil_example(line, lang, body, mark):
    canonical = _canonical(body, f"docs/syntax.md:{line}")
    if mark == "not canonical":
        assert canonical != body, "marked <!-- not canonical --> but it is canonical"
        # What it means is printed canonically, and that reads back to itself.
        assert miltext.dumps(miltext.loads(canonical)) == canonical
    else:
        assert mark == "", f"unknown mark <!-- {mark} --> before a mil block"
        assert canonical == body


def _canonical(text: str, name: str) -> str:
    """The canonical text, its model section (§13) included."""
    from miltext.model.text import model_text, parse_model
    return model_text(parse_model(text, name))


def test_the_doc_has_formatting_examples():
    assert FMT


@pytest.mark.parametrize("index,block", FMT, ids=[f"line{b[0]}" for _, b in FMT])
def test_fmt_example(index, block):
    from miltext.authored.formatter import format_source
    line, lang, body, mark = block
    assert index + 1 < len(BLOCKS) and BLOCKS[index + 1][3] == "fmt output", \
        "a <!-- fmt input --> block needs a <!-- fmt output --> block after it"
    expected = BLOCKS[index + 1][2]
    assert format_source(body, f"docs/syntax.md:{line}") == expected
    assert format_source(expected) == expected


@pytest.mark.parametrize("index,block", ERRORS, ids=[f"line{b[0]}" for _, b in ERRORS])
def test_error_example(index, block):
    line, lang, body, mark = block
    filename = mark.split(":", 1)[1].strip()
    assert index + 1 < len(BLOCKS), "an error example needs the expected error after it"
    expected = BLOCKS[index + 1][2].rstrip("\n")
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(body, filename)
    assert str(info.value) == expected
