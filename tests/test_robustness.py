"""Whatever text or bytes a user hands miltext, the answer is a program or a clean error.

- 10,000 seeded mutations of real texts (canonical text of corpus programs and coremltools'
  prints): each gives a Program or a ParseError whose position is inside the text, whose
  message has none of the parser generator's words, and whose rendering shows the line it
  points at; and what does parse prints to a fixed point.
- Deep nesting: blocks up to the documented limit parse and print; past it, a ParseError; list
  literals and types nested absurdly deep never end in a RecursionError.
- Corrupt protobuf: truncated and bit-flipped corpus .pb files decode or raise miltext.ProgramError (never protobuf's DecodeError),
  whatever decodes prints as text that reads back to it, and `miltext print` on a corrupt file
  exits 1 with a short message, never a traceback.
"""
import os
import random
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass

import pytest

import miltext
from miltext.ir import TensorData, Value
from miltext.text.mil.parser import MAX_BLOCK_DEPTH
from support.corpus import CORPUS, proto_cases

SEED = 1234
MUTATIONS = 10_000

# Small programs with many kinds of syntax: nested blocks, bindings, quoted names and escapes,
# dicts, lists, blobs, tuples, attributes, docs, unknown dims, NaN bits, several functions.
CANONICAL_SOURCES = [
    "edge/loop_and_value_bindings", "edge/odd_names_and_strings", "edge/nested_values_and_blob_refs",
    "edge/tuple_types_and_attributes", "edge/program_doc_and_attributes",
    "edge/function_attributes_multi_specialization", "edge/unknown_shapes_and_unset_fields",
    "edge/float_bit_patterns", "coremltools/cond_basic", "coremltools/multifunction_raw",
]
# coremltools' own prints (raw strings and names, (Tensor) marks, dangling names).
PRINT_SOURCES = ["cond_basic", "while_loop_basic", "torch_mlp", "state_basic", "reshape_like_literals"]

# What a message must never show: the parser generator's names for things, or a traceback.
LARK_INTERNALS = ("__ANON", "Token(", "RPAR", "LPAR", "RSQB", "LSQB", "COMMA", "$END", "Traceback")

# Tokens for mutation: runs of whitespace, words, and single punctuation characters.
TOKEN = re.compile(r"\s+|[A-Za-z0-9_]+|.", re.S)
# Characters a flip may put in: MIL punctuation, quotes, escapes, and characters that are
# line breaks to some readers but not others.
ODD_CHARACTERS = list("()[]{}<>,:;=%*^?_.-+#\"'\\$`|~!/0") + [
    "\n", "\t", "\r", "\x00", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "é", "✓", "\ufeff", " "]

SHOW = 5  # failures shown in an assertion message


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def canonical_text(name: str) -> str:
    return miltext.dumps(miltext.Program.from_proto(read_bytes(os.path.join(CORPUS, name + ".pb"))))


def mutation_sources() -> list[tuple[str, str]]:
    sources = [(name, canonical_text(name)) for name in CANONICAL_SOURCES]
    for name in PRINT_SOURCES:
        with open(os.path.join(CORPUS, "coremltools", name + ".pymil.txt"), encoding="utf-8") as f:
            sources.append((name + ".pymil.txt", f.read()))
    return sources


def mutate(text: str, rng: random.Random) -> str:
    """One to three edits: delete, duplicate or swap a token; delete, duplicate or replace a
    character (with an odd character or one a bit away)."""
    for _ in range(rng.randint(1, 3)):
        kind = rng.randrange(6)
        if kind < 3:
            tokens = TOKEN.findall(text)
            if not tokens:
                continue
            i = rng.randrange(len(tokens))
            if kind == 0:
                del tokens[i]
            elif kind == 1:
                tokens.insert(i, tokens[i])
            else:
                j = rng.randrange(len(tokens))
                tokens[i], tokens[j] = tokens[j], tokens[i]
            text = "".join(tokens)
        elif text:
            i = rng.randrange(len(text))
            if kind == 3:
                text = text[:i] + text[i + 1:]
            elif kind == 4:
                text = text[:i] + text[i] + text[i:]
            else:
                if rng.random() < 0.5:
                    c = rng.choice(ODD_CHARACTERS)
                else:
                    c = chr(ord(text[i]) ^ (1 << rng.randrange(7)))
                text = text[:i] + c + text[i + 1:]
    return text


@dataclass
class Outcome:
    source: str
    text: str
    program: object = None
    error: Exception = None


def describe(outcome: Outcome, detail: str = "") -> str:
    what = f"{type(outcome.error).__name__}: {outcome.error}" if outcome.error else "parsed"
    return f"--- mutation of {outcome.source}: {what}\n{detail}text:\n{outcome.text!r}\n"


def failures(title: str, items: list[str]) -> str:
    return f"{len(items)} {title}; the first {min(len(items), SHOW)}:\n" + "\n".join(items[:SHOW])


@pytest.fixture(scope="module")
def mutation_outcomes() -> list[Outcome]:
    rng = random.Random(SEED)
    sources = mutation_sources()
    outcomes = []
    for k in range(MUTATIONS):
        name, text = sources[k % len(sources)]
        mutated = mutate(text, rng)
        try:
            outcomes.append(Outcome(name, mutated, program=miltext.loads(mutated)))
        except Exception as e:  # noqa: BLE001 - what else comes out is what the tests look at
            outcomes.append(Outcome(name, mutated, error=e))
    return outcomes


def parse_errors(outcomes):
    return [o for o in outcomes if isinstance(o.error, miltext.ParseError)]


# ---- mutations -------------------------------------------------------------------------------

def test_mutations_are_a_real_mix_of_good_and_bad_text(mutation_outcomes):
    """Guards the tests below: the mutations must produce both programs and errors."""
    assert len(mutation_outcomes) == MUTATIONS
    kinds = Counter("program" if o.program is not None else "error" for o in mutation_outcomes)
    assert kinds["program"] >= MUTATIONS // 20 and kinds["error"] >= MUTATIONS // 2, kinds


def test_every_mutation_gives_a_program_or_a_parse_error(mutation_outcomes):
    bad = [describe(o) for o in mutation_outcomes
           if o.error is not None and not isinstance(o.error, miltext.ParseError)]
    assert not bad, failures("mutations raised something other than ParseError", bad)


def test_parse_errors_point_inside_the_text(mutation_outcomes):
    """Lines and columns are 1-based; a line is at most one past the last, a column at most
    one past the end of its line (lines end at "\\n", as the parser counts them)."""
    bad = []
    for o in parse_errors(mutation_outcomes):
        lines = o.text.split("\n")
        for line, column, message in o.error.errors:
            width = len(lines[line - 1]) if 1 <= line <= len(lines) else 0
            if not (1 <= line <= len(lines) + 1 and 1 <= column <= width + 1):
                bad.append(describe(o, f"error at {line}:{column} ({message})\n"))
    assert not bad, failures("parse errors point outside the text", bad)


def test_parse_error_messages_have_no_parser_internals(mutation_outcomes):
    bad = []
    for o in parse_errors(mutation_outcomes):
        texts = [str(o.error)] + [message for _, _, message in o.error.errors]
        words = [w for w in LARK_INTERNALS if any(w in t for t in texts)]
        if words:
            bad.append(describe(o, f"shows {words}\n"))
    assert not bad, failures("messages show parser internals", bad)


def shows_line(shown: str, actual: str) -> bool:
    """Whether `shown` is how the diagnostic may display source line `actual`: the line itself
    (a long one cut around the column, with "..."), or the line up to a character a terminal
    would break it at."""
    actual = actual.rstrip("\r")
    if shown == actual or shown == (actual.splitlines() or [""])[0]:
        return True
    return "..." in shown and all(part in actual for part in shown.split("...") if part)


def test_parse_errors_show_the_line_they_point_at(mutation_outcomes):
    bad = []
    for o in parse_errors(mutation_outcomes):
        lines = o.text.split("\n")
        if o.error.line > len(lines):
            continue
        rendered = str(o.error).split("\n")
        actual = lines[o.error.line - 1]
        if len(rendered) < 3 or not shows_line(rendered[1], actual):
            bad.append(describe(o, f"line {o.error.line} is {actual!r}\n"))
    assert not bad, failures("diagnostics show a line other than the one they point at", bad)


def test_mutations_that_parse_print_to_a_fixed_point(mutation_outcomes):
    """Whatever miltext accepts, it prints as canonical text that reads back to itself."""
    bad = []
    for o in mutation_outcomes:
        if o.program is None:
            continue
        try:
            text = miltext.dumps(o.program)
            again = miltext.dumps(miltext.loads(text))
        except Exception as e:  # noqa: BLE001
            bad.append(describe(o, f"printing or reading back raised {type(e).__name__}: {e}\n"))
            continue
        if again != text:
            bad.append(describe(o, f"printed:\n{text}\nwhich reads back and prints as:\n{again}\n"))
    assert not bad, failures("accepted mutations do not print to a fixed point", bad)


# ---- what the mutations found, each on its own -------------------------------------------------

def test_a_tensor_type_may_span_lines():
    """Line breaks are free between tokens (docs/syntax.md §2), inside a type too."""
    one_line = ("main[CoreML7](%x: (2, 3, fp32)) {\n  block0() {\n"
                '    %y: (2, 3, fp32) = relu(x=%x, name="y")\n  } -> (%y)\n}\n')
    split = one_line.replace("(2, 3, fp32)) {", "(2,\n              3,\n              fp32)) {")
    assert miltext.dumps(miltext.loads(split)) == one_line


@pytest.mark.parametrize("string", ["tab\there (2, fp32)(Tensor)", 'quote " and (1, fp16)*(Scalar)'])
def test_canonical_text_is_never_read_as_a_coremltools_print(string):
    """A string that happens to hold coremltools' `)(Tensor)` mark must not switch the reading
    of miltext's own text to coremltools mode (where escapes are not escapes)."""
    program = miltext.loads(canonical_text("edge/odd_names_and_strings"))
    const = program.functions["main"].block.operations[-1]
    const.attributes["val"] = Value.tensor(string)
    data = program.to_proto().SerializeToString(deterministic=True)
    back = miltext.loads(miltext.dumps(program))
    assert back.functions["main"].block.operations[-1].attributes["val"] == Value.tensor(string)
    assert back.to_proto().SerializeToString(deterministic=True) == data


# ---- deep nesting --------------------------------------------------------------------------

def nested_conds(depth: int) -> str:
    """`depth` cond ops, each in the true branch of the one before, in the layout of the
    printer (tests/corpus/edge/deep_nesting.pb): blocks nest depth + 1 deep, counting the
    function's block. Block `blockN` is N + 1 deep."""
    lines = ["main[CoreML7](%x: (2, 3, fp32),", "              %p: (bool)) {", "  block0() {"]
    for level in range(depth):
        indent = "    " + "    " * level
        lines.append(f'{indent}%c{level}: (2, 3, fp32) = cond(pred=%p, name="cond{level}")')
        lines.append(f"{indent}  block{level + 1}() {{")
    lines.append("    " * (depth + 1) + '%leaf: (2, 3, fp32) = identity(x=%x, name="leaf")')
    for level in reversed(range(depth)):
        indent = "    " + "    " * level
        inner = f"%c{level + 1}" if level + 1 < depth else "%leaf"
        lines += [f"{indent}  }} -> ({inner})",
                  f"{indent}  else{level}() {{",
                  f'{indent}    %r{level}: (2, 3, fp32) = relu(x=%x, name="r{level}")',
                  f"{indent}  }} -> (%r{level})"]
    lines += ["  } -> (%c0)", "}"]
    return "\n".join(lines) + "\n"


def block_depth(program) -> int:
    def depth(block):
        return 1 + max((depth(b) for op in block.operations for b in op.blocks), default=0)
    return max(depth(b) for fn in program.functions.values() for b in fn.blocks.values())


def test_200_nested_blocks_parse_and_print_to_a_fixed_point():
    program = miltext.loads(nested_conds(200))
    assert block_depth(program) == 201
    text = miltext.dumps(program)
    assert miltext.dumps(miltext.loads(text)) == text


def test_blocks_nest_up_to_the_documented_limit():
    """docs/syntax.md: nesting is limited to 256 levels."""
    assert MAX_BLOCK_DEPTH == 256
    assert block_depth(miltext.loads(nested_conds(MAX_BLOCK_DEPTH - 1))) == MAX_BLOCK_DEPTH
    with pytest.raises(miltext.ParseError, match="nested"):
        miltext.loads(nested_conds(MAX_BLOCK_DEPTH))


def test_300_nested_blocks_are_a_parse_error():
    text = nested_conds(300)
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text, "deep.mil")
    e = info.value
    assert "nested" in e.message
    assert 1 <= e.line <= text.count("\n") and e.column >= 1
    assert str(e).startswith(f"deep.mil:{e.line}:{e.column}: error: ")


def test_nesting_error_points_at_the_first_block_too_deep():
    """The limit is crossed at the first block deeper than 256: that is where to look."""
    text = nested_conds(300)
    lines = text.split("\n")
    first = f"block{MAX_BLOCK_DEPTH}() {{"
    line = next(i for i, s in enumerate(lines, 1) if s.strip() == first)
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text)
    assert (info.value.line, info.value.column) == (line, lines[line - 1].index(first) + 1)


def test_a_deep_program_that_builds_reads_back():
    """What miltext builds, miltext reads: a 200-deep program that `to_proto` accepts must come
    back from its own bytes (or building must refuse it with a ProgramError)."""
    program = miltext.loads(nested_conds(200))
    try:
        data = program.to_proto(strict=True).SerializeToString(deterministic=True)
    except miltext.ProgramError:
        return
    assert miltext.dumps(miltext.Program.from_proto(data)) == miltext.dumps(program)


def with_value(value: str, out_type: str = "(fp32)") -> str:
    """A program whose op line (line 3) has `value` as an argument starting at column 23."""
    return ("main[CoreML7]() {\n  block0() {\n"
            f'    %y: {out_type} = op(v={value}, name="y")\n  }} -> (%y)\n}}\n')


DEEP_LITERALS = {
    "list-of-ints-1000": "[" * 1000 + "1" + "]" * 1000,
    "list-of-strings-1000": "[" * 1000 + '"a"' + "]" * 1000,
    "list-of-floats-and-bools-1000": "[" * 1000 + "1.0, True" + "]" * 1000,
    "empty-lists-3000": "[" * 3000 + "]" * 3000,
    "dict-1000": "{1: " * 1000 + "1" + "}" * 1000,
    "dtype-call-1000": "fp16(" + "[" * 1000 + "1" + "]" * 1000 + ")",
    "parentheses-1000": "(" * 1000 + "1" + ")" * 1000,
    "list-of-ints-100": "[" * 100 + "1" + "]" * 100,
}


@pytest.mark.parametrize("literal", DEEP_LITERALS.values(), ids=DEEP_LITERALS.keys())
def test_deeply_nested_literal_is_a_parse_error(literal):
    with pytest.raises(miltext.ParseError):
        miltext.loads(with_value(literal))


@pytest.mark.parametrize("name", ["list-of-ints-1000", "list-of-strings-1000", "dict-1000",
                                  "dtype-call-1000", "list-of-ints-100"])
def test_deep_literal_error_is_on_its_line_and_says_why(name):
    """Too deep is the reason, and line 3 (where the literal is) is the place: not 1:1, and not
    'ragged' for a list that is not."""
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(with_value(DEEP_LITERALS[name]))
    assert info.value.line == 3, str(info.value)
    assert "nested" in info.value.message and "ragged" not in info.value.message, info.value.message


@pytest.mark.parametrize("element", ["1", '"a"'])
def test_list_literals_nest_up_to_64_levels(element):
    """The limit the message states ("nested deeper than 64 levels") is the limit applied."""
    deepest = miltext.loads(with_value("[" * 64 + element + "]" * 64))
    value = deepest.functions["main"].block.operations[0].inputs["v"][0]
    assert value.type.shape == (1,) * 64
    with pytest.raises(miltext.ParseError, match="64"):
        miltext.loads(with_value("[" * 65 + element + "]" * 65))


@pytest.mark.parametrize("kind", ["List", "Tuple"])
def test_deeply_nested_type_is_an_error_or_a_program_that_prints(kind):
    """A type nested 1000 deep: either a ParseError, or a program that prints and reads back
    (never a RecursionError on the way)."""
    text = ("main[CoreML7]() {\n  block0() {\n"
            f'    %y: {(kind + "[") * 1000}(fp32){"]" * 1000} = op(name="y")\n  }} -> (%y)\n}}\n')
    try:
        program = miltext.loads(text)
    except miltext.ParseError:
        return
    printed = miltext.dumps(program)
    assert miltext.dumps(miltext.loads(printed)) == printed


# ---- corrupt protobuf ----------------------------------------------------------------------

CORRUPT_SOURCES = ["coremltools/torch_mlp", "coremltools/cond_basic", "edge/nested_values_and_blob_refs",
                   "edge/program_doc_and_attributes", "edge/loop_and_value_bindings"]


def corpus_pb(name: str) -> bytes:
    return read_bytes(os.path.join(CORPUS, name + ".pb"))


def truncations(data: bytes) -> list[bytes]:
    return [data[:n] for n in range(0, len(data), 7)]


def corruptions(data: bytes, rng: random.Random, count: int) -> list[bytes]:
    """`count` copies of `data`, each with one to four bytes flipped, replaced, dropped or
    doubled."""
    out = []
    for _ in range(count):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            if not b:
                break
            i = rng.randrange(len(b))
            kind = rng.randrange(4)
            if kind == 0:
                b[i] ^= 1 << rng.randrange(8)
            elif kind == 1:
                b[i] = rng.randrange(256)
            elif kind == 2:
                del b[i]
            else:
                b.insert(i, b[i])
        out.append(bytes(b))
    return out


def decode_outcome(data: bytes):
    """The Program, or None for a miltext.ProgramError; anything else propagates."""
    try:
        return miltext.Program.from_proto(data)
    except miltext.ProgramError:
        return None


def decode_all(damaged: list[bytes]) -> tuple[int, list[str]]:
    """How many of `damaged` raise ProgramError, and what went wrong otherwise."""
    decode_errors, crashes = 0, []
    for i, data in enumerate(damaged):
        try:
            miltext.Program.from_proto(data)
        except miltext.ProgramError:
            decode_errors += 1
        except Exception as e:  # noqa: BLE001
            crashes.append(f"--- #{i} ({len(data)} bytes): {type(e).__name__}: {e}\n{data!r}")
    return decode_errors, crashes


@pytest.mark.parametrize("name", CORRUPT_SOURCES)
def test_truncated_proto_decodes_or_raises_decode_error(name):
    decode_errors, crashes = decode_all(truncations(corpus_pb(name)))
    assert not crashes, failures("truncations raised something other than ProgramError", crashes)
    assert decode_errors  # the truncations really are broken


@pytest.mark.parametrize("name", CORRUPT_SOURCES)
def test_corrupted_proto_decodes_or_raises_decode_error(name):
    decode_errors, crashes = decode_all(corruptions(corpus_pb(name), random.Random(SEED), 300))
    assert not crashes, failures("corruptions raised something other than ProgramError", crashes)
    assert decode_errors


def test_corrupt_protos_that_decode_print_as_text_that_reads_back():
    """A damaged file that is still a valid Program message is a program like any other: its
    text must read back to the same proto (what `miltext print` shows is the truth)."""
    rng = random.Random(SEED)
    bad, decoded = [], 0
    for path in proto_cases():
        data = read_bytes(path)
        for damaged in truncations(data) + corruptions(data, rng, 40):
            program = decode_outcome(damaged)
            if program is None:
                continue
            decoded += 1
            text = None
            try:
                expected = program.to_proto().SerializeToString(deterministic=True)
                text = miltext.dumps(program)
                got = miltext.loads(text).to_proto().SerializeToString(deterministic=True)
            except Exception as e:  # noqa: BLE001
                bad.append(f"--- {os.path.basename(path)}: {type(e).__name__}: {e}\ntext:\n{text}")
                continue
            if got != expected:
                bad.append(f"--- {os.path.basename(path)}: text reads back as another proto\ntext:\n{text}")
    assert decoded >= 100  # enough damaged files still decode for this to mean something
    assert not bad, failures("decoded damaged protos do not survive printing", bad)


def test_dict_holding_an_empty_string_tensor_round_trips():
    """What the damaged protos found: a string scalar with no elements (alone it prints as
    `(string)([])`) printed bare inside a dict, `{"k": [], "a": ""}`, which does not read back."""
    program = miltext.Program.from_proto(corpus_pb("edge/program_doc_and_attributes"))
    items = program.attributes["buildInfo"].data.items
    key, value = items[0]
    items[0] = (key, Value(value.type, TensorData("strings", []), value.doc))
    data = program.to_proto().SerializeToString(deterministic=True)
    text = miltext.dumps(miltext.Program.from_proto(data))
    assert miltext.loads(text).to_proto().SerializeToString(deterministic=True) == data


def run_cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "miltext.cli", *args], cwd=cwd, capture_output=True,
                          text=True, encoding="utf-8", errors="replace", timeout=120)


def corrupt_files() -> dict[str, bytes]:
    mlp = corpus_pb("coremltools/torch_mlp")
    broken = next(d for d in corruptions(mlp, random.Random(SEED), 100) if decode_outcome(d) is None)
    return {
        "truncated.pb": mlp[:100],
        "flipped.pb": broken,
        "garbage.pb": bytes(random.Random(SEED).randrange(256) for _ in range(500)),
        "text_as_pb.pb": b"main[CoreML7]() {\n}\n" * 3,
    }


@pytest.mark.parametrize("name", list(corrupt_files()))
def test_cli_print_of_a_corrupt_proto_fails_cleanly(name, tmp_path):
    data = corrupt_files()[name]
    assert decode_outcome(data) is None
    (tmp_path / name).write_bytes(data)
    result = run_cli("print", name, cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(name) and len(result.stderr.strip().splitlines()) <= 3, result.stderr
