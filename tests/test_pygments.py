"""The Pygments lexer (miltext/pygments_lexer.py, the `pygments` extra): found through its
entry point as `mil`, run by pygmentize, and no Error token on any text of either dialect."""
import os
import subprocess
import sys

import pytest

from support.editor_texts import DTYPE_NAMED_VARS, SAMPLES, dtype_named_places, printed_texts, text_files

try:  # a missing Pygments fails the run, with what to install
    from pygments.lexers import get_lexer_by_name, get_lexer_for_filename
    from pygments.styles import get_style_by_name
    from pygments.token import Comment, Error, Keyword, Name, Number, String
except ImportError:
    pytest.fail("Pygments is not installed: pip install -e '.[pygments]' (make test does)", pytrace=False)



def texts() -> list[tuple[str, str]]:
    out = []
    for path in text_files():
        with open(path, encoding="utf-8") as f:
            out.append((os.path.basename(path), f.read()))
    return out + printed_texts()


def test_entry_point_registers_the_lexer():
    from miltext.pygments_lexer import MilLexer
    assert type(get_lexer_by_name("mil")) is MilLexer
    assert type(get_lexer_for_filename("model.mil")) is MilLexer


def test_no_error_token_in_any_text():
    lexer = get_lexer_by_name("mil")
    found = []
    for name, text in texts():
        for offset, token, value in lexer.get_tokens_unprocessed(text):
            if token in Error:
                line = text.count("\n", 0, offset) + 1
                found.append(f"{name}:{line}: {value!r} in {text[max(0, offset - 30):offset + 30]!r}")
    assert not found, "\n".join(found[:20])


def tokens_of(line: str) -> dict:
    return {value: token for token, value in get_lexer_by_name("mil").get_tokens(line) if value.strip()}


def test_constructs_of_both_dialects():
    ours = tokens_of('%y: (2, fp16) = relu(x=%"in 0", name="y")  # note\n')
    assert ours["%y"] in Name.Variable and ours['%"in 0"'] in Name.Variable
    assert ours["fp16"] in Keyword.Type and ours["relu"] in Name.Builtin and ours["x"] in Name.Attribute
    assert ours["# note"] in Comment
    model = tokens_of("model(specificationVersion=8) {\n  input %x: (2, fp32)\n}\n")
    assert model["model"] in Keyword and model["input"] in Keyword and model["%x"] in Name.Variable
    header = tokens_of("main[CoreML7](%x: (2, fp32)) {\n  block0() {\n")
    assert header["main"] in Name.Function and header["CoreML7"] in Name.Namespace
    assert header["block0"] in Name.Label
    values = tokens_of('[0x1.8p1, -inf, nan(0x7fc00001), 0x1F, 7, b64"AQI=", "a\\tb"]\n')
    assert all(values[v] in Number.Float for v in ("0x1.8p1", "-inf", "nan(0x7fc00001)"))
    assert values["0x1F"] in Number.Hex and values["7"] in Number.Integer
    assert values["AQI="] in String.Other and values["\\t"] in String.Escape
    apple = tokens_of("    func main<ios17>(tensor<fp32, [1, ?]> x) {\n")
    assert apple["func"] in Keyword and apple["main"] in Name.Function and apple["ios17"] in Name.Namespace
    assert apple["tensor"] in Keyword.Type and apple["x"] in Name.Variable
    blob = tokens_of('tensor<fp16, [2]>(BLOBFILE(path = string("w.bin"), offset = uint64(64)))\n')
    assert blob["BLOBFILE"] in Name.Builtin and blob["offset"] in Name.Attribute and blob["uint64"] in Keyword.Type


def test_pygmentize_colours_a_file():
    pygmentize = os.path.join(os.path.dirname(sys.executable), "pygmentize")
    run = subprocess.run([pygmentize, "-l", "mil", "-f", "raw", os.path.join(SAMPLES, "sample_modelmil.mil")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "Token.Keyword.Declaration\t'func'" in run.stdout
    assert "Token.Error" not in run.stdout


def test_a_var_named_like_a_dtype_is_a_var():
    lexer = get_lexer_by_name("mil")
    for name, (text, expected) in DTYPE_NAMED_VARS.items():
        starts = {}
        offset = 0
        for token, value in lexer.get_tokens(text):
            starts[offset] = (token, value)
            offset += len(value)
        lines = text.split("\n")
        for line, start, end, kind in dtype_named_places(text, expected):
            at = sum(len(x) + 1 for x in lines[:line]) + start
            token, value = starts[at]
            assert value == lines[line][start:end], (name, line, value)
            assert token in (Name.Variable if kind == "var" else Keyword.Type), (name, line, value, token)


def test_ops_vars_and_functions_get_colours_of_their_own():
    style = get_style_by_name("default")
    ours = tokens_of('main[CoreML7](%x: (2, fp32)) {\n  block0() {\n    %y: (2, fp32) = relu(x=%x)\n')
    colours = {style.style_for_token(ours[w])["color"] for w in ("main", "relu", "%y")}
    assert len(colours) == 3
