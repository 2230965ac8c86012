"""No pattern the lexers or the literal readers use can backtrack super-linearly.

A 214-byte number list once hung every command: a number pattern that could split a run of
digits in many ways made a malformed list take time exponential in its length. This runs every
grammar terminal (both flavours of the MIL grammar and Apple's model.mil one) and every regex
compiled at module level in miltext against long adversarial strings (runs of the pieces those
patterns are made of, ended by a character that makes the match fail), with a time bound.
"""
import importlib
import pkgutil
import re
import signal
from contextlib import contextmanager

import pytest

import miltext
from miltext.text.mil import parser
from miltext.text.modelmil import parser as modelmil_parser

# The pieces MIL text is made of; each run repeats one and ends in a way that fails a match.
PIECES = ["1", "1,", "1, ", "11,", "1111111111, ", "0.11,", "1.", "1.1,", "1e1,", "-1,", "0x1", "0x1.", "a", "a.", "a=", "a_",
          "%a", "%a,", '"', '"a', '\\"', "\\", "'", "[", "[1,", "[[1],", "(", "(1,", "(?, ",
          "fp32,", "nan,", "inf,", " ", "\t", "\n", ",", ":", "[]", "<", "blob(1),", "->",
          "#", "}", "{"]
TAILS = ["", "!", "1-1", "]", ")", "\x00", '"', "\n"]
LENGTH = 3000
BOUND = 0.5  # seconds for one search over one 3,000-character string


def grammar_patterns():
    for raw in (False, True):
        for t in parser._parser(raw).lark.terminals:
            yield f"mil{'-raw' if raw else ''}:{t.name}", re.compile(t.pattern.to_regexp())
    for t in modelmil_parser._parser().lark.terminals:
        yield f"modelmil:{t.name}", re.compile(t.pattern.to_regexp())


def module_patterns():
    for info in pkgutil.walk_packages(miltext.__path__, "miltext."):
        if info.name.endswith(("__main__",)) or ".lsp" in info.name:
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra (pygls, pygments) that is not installed
            continue
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern):
                yield f"{info.name}.{name}", value


def adversarial_strings():
    for piece in PIECES:
        run = piece * (LENGTH // len(piece))
        for tail in TAILS:
            yield run + tail


PATTERNS = dict(grammar_patterns())
PATTERNS.update(module_patterns())


def test_the_collection_is_not_empty():
    assert sum(k.startswith("mil:") for k in PATTERNS) > 20
    assert "miltext.text.numbers.NUMBER" in PATTERNS


class TooSlow(Exception):
    pass


@contextmanager
def time_bound(seconds: float):
    """Interrupts a match that runs past the bound (the regex engine checks for signals), so a
    backtracking pattern fails the test instead of hanging it."""
    def interrupt(*_):
        raise TooSlow
    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_is_linear_on_adversarial_input(name):
    pattern = PATTERNS[name]
    for text in adversarial_strings():
        try:
            with time_bound(BOUND):
                pattern.match(text)
                pattern.fullmatch(text)
        except TooSlow:
            pytest.fail(f"{name} takes over {BOUND} s on {text[:30]!r}... ({len(text)} characters)")


def test_the_number_list_that_hung_reads_at_once():
    """The list from the attack campaign, grown: each extra number used to multiply the time
    by about 10."""
    numbers = ", ".join(["1111111111"] * 200)
    text = ('main[CoreML7](%x: (2, fp32)) {\n  block0() {\n'
            f'    %w: (2, fp32) = const(val=[{numbers}, 1-1], name="w")\n  }} -> (%w)\n}}\n')
    with time_bound(2), pytest.raises(miltext.ParseError) as error:
        miltext.loads(text)
    assert "malformed number list" in str(error.value)
    assert ":3:" in str(error.value)
