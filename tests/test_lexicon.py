"""text/lexicon.py and Lark's lexer read tokens alike: over every corpus and example text (and
each corpus program printed in both dialects), each token Lark's lexer hands the parser of a
kind the lexicon spells (names, %names, strings, dtypes, keys) is exactly what the lexicon's
pattern matches at that place, and the scanner finds the same strings; the lexicon's dtype
words are miltext.dtypes' names."""
import glob
import os
import re

import pytest
from lark import Lark

from miltext import dtypes
from miltext.text import lexicon
from miltext.text.dialects import COREMLTOOLS
from miltext.text.grammars import _PLACEHOLDER, grammar_text
from miltext.text.modelmil.words import looks_like_modelmil
from support.corpus import HERE, corpus_files, print_cases
from support.editor_texts import printed_texts

ROOT = os.path.dirname(HERE)

# Lark's terminal -> the lexicon's pattern for it, in each flavour of the text.
_MIL = {"VAR": lexicon.VAR, "NAME": lexicon.NAME, "STRING": f"{lexicon.STRING}|{lexicon.SINGLE_QUOTED}",
        "DTYPE": lexicon.DTYPE, "KEY": lexicon.NAME + r"[ \t]*=(?!=)",
        "ARG_REF": lexicon.NAME + r"[ \t]*=[ \t]*" + lexicon.BARE_VAR}
_RAW = {**_MIL, "VAR": lexicon.RAW_VAR, "STRING": lexicon.RAW_STRING,
        "ARG_REF": lexicon.NAME + r"[ \t]*=[ \t]*" + lexicon.RAW_VAR}
_MODELMIL = {"NAME": lexicon.IDENT, "STRING": lexicon.STRING, "DTYPE": f"(?:{lexicon.DTYPE_NAME})(?![A-Za-z0-9_])"}


def _texts() -> list[tuple[str, str]]:
    paths = sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.mil"), recursive=True)) + \
        corpus_files("modelmil", ".mil") + print_cases() + \
        sorted(glob.glob(os.path.join(HERE, "editors", "*.mil")))
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            out.append((os.path.relpath(path, ROOT), f.read()))
    return out + printed_texts()


_LEXERS: dict = {}
_SEEN: list = []   # the tokens of the kinds the lexicon spells, as the lexer hands them over


def _seen(tok):
    _SEEN.append(tok)
    return tok


def _tokens(text: str, flavour: str) -> list:
    """Every token of a kind the lexicon spells that Lark's contextual lexer hands the parser,
    reading `text` whole."""
    if flavour not in _LEXERS:
        grammar = grammar_text("modelmil.lark") if flavour == "modelmil" else grammar_text(raw=flavour == "raw")
        kinds = {"modelmil": _MODELMIL, "raw": _RAW, "mil": _MIL}[flavour]
        _LEXERS[flavour] = Lark(grammar, parser="lalr", lexer="contextual", maybe_placeholders=False,
                                lexer_callbacks={kind: _seen for kind in kinds})
    _SEEN.clear()
    _LEXERS[flavour].parse(text)
    return list(_SEEN)


def _flavour(text: str) -> str:
    return "modelmil" if looks_like_modelmil(text) else "raw" if COREMLTOOLS.detect(text) else "mil"


TEXTS = _texts()


@pytest.mark.parametrize("name,text", TEXTS, ids=[name for name, _ in TEXTS])
def test_lexicon_matches_larks_tokens(name, text):
    flavour = _flavour(text)
    patterns = {"modelmil": _MODELMIL, "raw": _RAW, "mil": _MIL}[flavour]
    compiled = {kind: re.compile(p) for kind, p in patterns.items()}
    scanner = lexicon.scanner(raw=flavour == "raw")
    seen = set()
    for tok in _tokens(text, flavour):
        if tok.type not in compiled:
            continue
        seen.add(tok.type)
        m = compiled[tok.type].match(text, tok.start_pos)
        assert m is not None, f"{name}:{tok.line}:{tok.column}: lexicon does not read {tok.type} {str(tok)!r}"
        assert m.end() == tok.end_pos, \
            f"{name}:{tok.line}:{tok.column}: Lark's {tok.type} is {str(tok)!r}, the lexicon's {m.group()!r}"
        if tok.type == "STRING":
            s = scanner.match(text, tok.start_pos)
            assert s is not None and s.lastgroup == "string" and s.end() == tok.end_pos, \
                f"{name}:{tok.line}:{tok.column}: the scanner does not read the string {str(tok)!r}"
    assert seen or "(" not in text.partition("\n")[2], f"{name}: no token of the kinds the lexicon spells"


def test_the_corpus_holds_every_kind_of_token():
    """The test above saw each kind of token in each flavour of text (else it proves nothing)."""
    seen = {"mil": set(), "raw": set(), "modelmil": set()}
    for _, text in TEXTS:
        flavour = _flavour(text)
        seen[flavour] |= {tok.type for tok in _tokens(text, flavour)}
    assert set(_MIL) <= seen["mil"]
    assert {"VAR", "NAME", "STRING", "DTYPE"} <= seen["raw"]
    assert set(_MODELMIL) <= seen["modelmil"]


def test_dtype_words_are_mils_dtypes():
    assert sorted(lexicon.DTYPE_NAMES) == sorted(n for n in dtypes.NAMES if n != "unused")
    assert len(set(lexicon.DTYPE_NAMES)) == len(lexicon.DTYPE_NAMES)
    assert all(dtypes.by_name(w) for w in lexicon.COREMLTOOLS4_DTYPES + lexicon.OTHER_DTYPE_WORDS)


def test_grammars_hold_no_spelling_left_to_fill_in():
    """Every {{PLACEHOLDER}} of grammar/*.lark is filled in, and the var-name class is written
    in the lexicon only."""
    for name in ("mil.lark", "modelmil.lark"):
        assert not _PLACEHOLDER.search(grammar_text(name))
    assert not _PLACEHOLDER.search(grammar_text("mil.lark", raw=True))
    assert lexicon.VAR_CHAR in grammar_text("mil.lark").replace("\\/", "/")
    with open(os.path.join(ROOT, "grammar", "mil.lark"), encoding="utf-8") as f:
        assert "A-Za-z0-9_.@" not in f.read()


def test_scanner_steps_over_strings_comments_and_raw_names():
    text = '%a"b: (1, fp32) = f(x="(", y=\'[\')  # {\n'
    found = [(m.lastgroup, m.group()) for m in lexicon.scanner(raw=True).finditer(text)]
    assert found == [("name", '%a"b'), ("open", "("), ("close", ")"), ("open", "("), ("string", '"("'),
                     ("string", "'['"), ("close", ")"), ("comment", "# {")]
    # an unclosed string runs to the end of its line, and no further
    found = [m.group() for m in lexicon.scanner().finditer('f("(\n)')]
    assert found == ["(", '"(', ")"]
