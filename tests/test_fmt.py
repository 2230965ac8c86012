"""The formatter keeps what the author wrote (docs/syntax.md §10): comments where they were,
blank lines between groups of ops, shorthand, literals written as numbers. Checked on hand-laid
files with their expected text (tests/fmt_cases: NAME.mil and NAME.mil.expected; add a pair to
add a case), on every example, on the canonical text of every corpus program, and with random
comments put between the tokens of real texts."""
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import miltext
from miltext.authored.formatter import UnsafeFormat, comment_texts, format_source
from miltext.authored.scan import Scan
from miltext.model.text import parse_model
from miltext.text.dialects import COREMLTOOLS
from support import goldens
from support.corpus import case_id, print_cases, proto_cases

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "fmt_cases")
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


def _program_bytes(text: str):
    """The program's proto bytes; its canonical text where it has no proto until it is built
    (weights read from .npy or .safetensors files then)."""
    program = parse_model(text).program
    try:
        return program.to_bytes()
    except miltext.ProgramError:
        return miltext.dumps(program)


def _formats_safely(text: str) -> str:
    """The formatted text, checked: same program, same comments in the same order, a fixed point."""
    formatted = format_source(text)
    assert _program_bytes(formatted) == _program_bytes(text)
    assert comment_texts(formatted) == comment_texts(text)
    assert format_source(formatted) == formatted
    return formatted


# ---- hand-laid files with their expected text ---------------------------------------------------

FIXTURES = sorted(f for f in os.listdir(CASES) if f.endswith(".mil"))


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_formats_to_its_expected_text(name):
    text = _read(os.path.join(CASES, name))
    goldens.compare(os.path.join(CASES, name + ".expected"), _formats_safely(text))


def test_line_ends_and_tabs_do_not_matter():
    text = _read(os.path.join(CASES, "comments.mil"))
    expected = _read(os.path.join(CASES, "comments.mil.expected"))
    assert format_source(text.replace("\n", "\r\n").replace("    ", "\t")) == expected


def test_shorthand_stays_shorthand():
    formatted = format_source(_read(os.path.join(CASES, "shorthand.mil")))
    program = miltext.loads(formatted)
    ops = program.functions["main"].block.operations
    assert [op.name for op in ops] == [None, None, "named", None]       # no name written in
    assert [op.outputs[0].type is None for op in ops] == [True, True, False, True]   # no type
    assert [op.type for op in ops] == ["relu", "mul", "add", "cast"]    # and no const


def test_a_literal_written_as_numbers_stays_numbers_with_its_nesting():
    formatted = format_source(_read(os.path.join(CASES, "literals.mil")))
    assert "weight=[[" in formatted and formatted.count('b64"') == 1   # only the one written as b64
    widths = [len(line) for line in formatted.splitlines() if not line.lstrip().startswith(("%u", "%w", "#"))]
    assert max(widths) <= 100


def test_a_long_literal_wraps_under_its_opening_bracket():
    rows = ", ".join("[" + ", ".join(f"{r}.{c}5" for c in range(8)) + "]" for r in range(16))
    text = f"main(%x: (8, fp32)) {{\n  block0() {{\n    %y = linear(x=%x, weight=[{rows}])\n  }} -> (%y)\n}}\n"
    lines = format_source(text).splitlines()
    first = lines[2]
    column = first.index("[[") + 1
    assert first.endswith("[0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75],")
    assert all(line.index("[") == column for line in lines[3:18]) and lines[17].endswith("]])")


# ---- every example, every corpus program ------------------------------------------------------

def _examples() -> list[str]:
    found = []
    for root, _, files in os.walk(EXAMPLES):
        found += [os.path.join(root, f) for f in files if f.endswith(".mil")]
    return sorted(found)


@pytest.mark.parametrize("path", _examples(), ids=lambda p: os.path.relpath(p, EXAMPLES))
def test_every_example_is_formatted_already(path):
    text = _read(path)
    formatted = _formats_safely(text)
    assert comment_texts(formatted) == comment_texts(text)
    assert formatted == text     # what we ship is in the house style `miltext fmt --check` asks for


def test_the_commented_example_keeps_its_comments_where_they_were():
    text = _read(os.path.join(EXAMPLES, "transformer_block.mil"))
    assert len(comment_texts(text)) == 5
    formatted = format_source(text)
    assert formatted.startswith(text[:text.index("main")])               # the header comment
    assert "    # attention\n    %ln1 = layer_norm(" in formatted
    assert "    %res1 = add(x=%x, y=%attn)\n    # feed-forward\n    %ln2 = " in formatted


@pytest.mark.parametrize("path", proto_cases(), ids=case_id)
def test_canonical_text_of_every_corpus_program_is_left_as_it_is(path):
    with open(path, "rb") as f:
        text = miltext.proto_to_text(f.read())
    assert format_source(text) == text


# ---- random comments between the tokens of real texts -----------------------------------------

def _small_corpus_texts() -> list[str]:
    """Canonical texts of corpus programs, coremltools' prints of them, the commented example."""
    texts = []
    for path in proto_cases():
        with open(path, "rb") as f:
            text = miltext.proto_to_text(f.read())
        if 0 < len(text) < 6000:
            texts.append(text)
    prints = [_read(path) for path in print_cases()]
    return texts + [t for t in prints if len(t) < 3000][:8] + [_read(os.path.join(EXAMPLES, "transformer_block.mil"))]


TEXTS = _small_corpus_texts()
_LEXERS: dict = {}  # raw strings or not -> (a Lark parser, the recorder of its tokens)


def _token_ends(text: str) -> list[int]:
    """Where each token of `text` ends, as the parser's lexer splits it, a run of plain op lines
    (one token to the parser, a shortcut) split into its own tokens. In coremltools' print, not
    after a string: a raw string ends at the quote that a comma or bracket follows, so a comment
    there would change where it ends (`"say "hi""  # note` is not the string `say "hi"`)."""
    from lark import Lark

    from miltext.text.dialects import _COREMLTOOLS_PRINT
    from miltext.text.grammars import grammar_text
    raw = COREMLTOOLS.detect(text)
    if raw not in _LEXERS:

        class Recorder:
            always_accept = ()
            ends: list = []

            def process(self, stream):
                for tok in stream:
                    if not (raw and tok.type == "STRING"):
                        self.ends.append(tok.end_pos)
                    yield tok

        grammar = grammar_text(raw=raw).replace("| SIMPLE_OPS -> simple_ops", "")
        recorder = Recorder()
        _LEXERS[raw] = Lark(grammar, parser="lalr", lexer="contextual", postlex=recorder), recorder
    lark, recorder = _LEXERS[raw]
    recorder.ends = []
    lark.parse(text)
    # Nor inside the `)(Tensor)` marks, by which a print is told from canonical text.
    marks = [m.span() for m in _COREMLTOOLS_PRINT.finditer(text)] if raw else []
    return sorted(e for e in set(recorder.ends) if not any(a < e < b for a, b in marks))


def _op_starts(text: str) -> list[int]:
    """The offset of each op, in source order."""
    scan = Scan(text, COREMLTOOLS.detect(text))
    program = parse_model(text).program
    starts = []

    def visit(block):
        for op in block.operations:
            starts.append(scan.offset(op.loc))
            for nested in op.blocks:
                visit(nested)
    for fn in program.functions.values():
        for block in fn.blocks.values():
            visit(block)
    return sorted(starts)


def _ops_before(text: str) -> list[int]:
    """For each comment, how many ops start before it: which op it stands before."""
    starts = _op_starts(text)
    return [sum(1 for s in starts if s < c.start) for c in Scan(text, COREMLTOOLS.detect(text)).comments]


def _with_comments(text: str, ends: list[int], own_line: list[bool]) -> str:
    out, last = [], 0
    for i, (at, alone) in enumerate(zip(ends, own_line)):
        out += [text[last:at], ("\n# c%d\n" if alone else "  # c%d\n") % i]
        last = at
    return "".join(out) + text[last:]


def _survives(commented: str) -> None:
    formatted = format_source(commented)
    assert comment_texts(formatted) == comment_texts(commented)       # same texts, same order
    assert _ops_before(formatted) == _ops_before(commented)           # each before the same op
    assert _program_bytes(formatted) == _program_bytes(commented)
    assert format_source(formatted) == formatted


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_comments_between_tokens_survive_fmt(data):
    text = data.draw(st.sampled_from(TEXTS))
    ends = _token_ends(text)
    chosen = sorted(data.draw(st.lists(st.sampled_from(ends), min_size=1, max_size=12, unique=True)))
    own_line = data.draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    _survives(_with_comments(text, chosen, own_line))


@pytest.mark.parametrize("index", [0, 7, 20, -2, -5])
def test_a_comment_after_every_token_survives_fmt(index):
    text = TEXTS[index % len(TEXTS)]
    ends = _token_ends(text)
    _survives(_with_comments(text, ends, [i % 3 == 0 for i in range(len(ends))]))


@pytest.mark.parametrize("pattern", range(3))
def test_a_comment_after_every_token_of_a_model_section_and_header_survives_fmt(pattern):
    text = _read(os.path.join(EXAMPLES, "mlp", "model.mil"))     # a section, a header, buildInfo
    ends = [e for e in _token_ends(text) if e < text.index("\nmain")]
    _survives(_with_comments(text, ends, [(i + pattern) % 3 == 0 for i in range(len(ends))]))


# ---- the safety net ---------------------------------------------------------------------------

def test_fmt_refuses_what_would_change_the_program_or_lose_a_comment(tmp_path, monkeypatch, capsys):
    from miltext.authored import formatter
    from miltext.cli import main
    text = _read(os.path.join(CASES, "comments.mil"))
    path = tmp_path / "c.mil"
    path.write_text(text, encoding="utf-8")
    real = formatter.source_text
    for broken, says in [(lambda m, n: real(m, n).replace("relu", "sigmoid"), "a different program"),
                         (lambda m, n: real(m, n).replace("# the product", ""), "lose or change a comment"),
                         (lambda m, n: real(m, n).replace("add(", "add((", 1), "would not parse")]:
        monkeypatch.setattr(formatter, "source_text", broken)
        with pytest.raises(UnsafeFormat, match=says):
            format_source(text)
        assert main(["fmt", str(path)]) == 2
        assert f"{path}: error: not formatted: " in capsys.readouterr().err
        assert path.read_text(encoding="utf-8") == text
    monkeypatch.setattr(formatter, "source_text", real)
    assert main(["fmt", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == _read(os.path.join(CASES, "comments.mil.expected"))


def test_drop_comments_is_an_explicit_choice(tmp_path):
    from miltext.cli import main
    path = tmp_path / "c.mil"
    path.write_text(_read(os.path.join(CASES, "comments.mil")), encoding="utf-8")
    assert main(["fmt", "--drop-comments", str(path)]) == 0
    formatted = path.read_text(encoding="utf-8")
    assert comment_texts(formatted) == [] and "\n\n    %c = mul(" in formatted


def test_the_pre_commit_hook_is_this_formatter(tmp_path):
    import subprocess
    import sys
    root = os.path.dirname(HERE)
    hooks = _read(os.path.join(root, ".pre-commit-hooks.yaml"))
    entries = [line.split(":", 1)[1].strip() for line in hooks.splitlines() if line.strip().startswith("entry:")]
    assert entries == ["miltext fmt", "miltext fmt --check --diff"]
    text = _read(os.path.join(CASES, "comments.mil"))
    (tmp_path / "c.mil").write_text(text, encoding="utf-8")
    for entry, status in [(entries[1], 1), (entries[0], 0), (entries[1], 0)]:
        command = [sys.executable, "-m", "miltext.cli", *entry.split()[1:], "c.mil"]
        assert subprocess.run(command, cwd=tmp_path, capture_output=True, timeout=120).returncode == status
    assert (tmp_path / "c.mil").read_text(encoding="utf-8") == _read(os.path.join(CASES, "comments.mil.expected"))


def test_a_comment_in_the_model_section_moves_with_its_item_when_the_items_are_put_in_order():
    text = ("model(specificationVersion=8) {\n"
            "  # the prediction\n"
            "  output %y: (1, 4, fp32)  # a probability\n"
            "  # the image\n"
            "  input %x: (1, 4, fp32)\n"
            "}\n\n"
            "main[CoreML7](%x: (1, 4, fp32)) {\n  block0() {\n    %y = sigmoid(x=%x)\n  } -> (%y)\n}\n")
    formatted = format_source(text)
    assert formatted.startswith("model(specificationVersion=8) {\n"
                                "  # the image\n"
                                "  input %x: (1, 4, fp32)\n"
                                "  # the prediction\n"
                                "  output %y: (1, 4, fp32)  # a probability\n"
                                "}\n")
    assert format_source(formatted) == formatted
