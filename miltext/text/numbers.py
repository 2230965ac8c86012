"""Number lists read in one go: `[1, 2]`, `[[0.5, -1.0], [2.0, nan]]` as one NUMBERS token,
converted by numpy, with the shape read off the brackets."""
from __future__ import annotations

import json
import re
import warnings
from functools import lru_cache

import numpy as np
from lark import Token

from . import lexemes
from .literals import ELIDED, ListLit, LiteralError, NumLit

# Every pattern here reads each character one way only (no `[0-9]+\.?[0-9]*`, which splits a run
# of digits in many ways): a malformed list then fails in linear time, not exponential.
NUMBER = re.compile(r"[-+]?(?:inf|nan|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)")
FLOAT_MARK = re.compile(r"[.eEni]")
WHITESPACE = re.compile(r"\s+")
_NOT_NUMBER_CHARS = str.maketrans("", "", "0123456789.eE+-naif, \t")
_LONG_INT = re.compile(r"[0-9]{19}")
_INT_WORD = re.compile(r"\s*[-+]?[0-9]+\s*")
_NUMBER_RUN = re.compile(r"[^\[\],]+")
_NO_SPACE = str.maketrans("", "", " \t\r\n")
_NO_BRACKETS = str.maketrans("", "", "[]")


def read_numbers(text: str, pos) -> NumLit:
    """A NUMBERS token: the numbers converted in one go, the shape read off the brackets."""
    if "..." in text:
        if text[1:-1].strip() == "...":
            return ELIDED
        raise LiteralError("malformed number list")
    flat = text.count("[") == 1  # the common flat list: its shape is its length
    values = plain_values(text[1:-1] if flat else text.translate(_NO_BRACKETS))
    if values is not None:
        shape = (len(values),) if flat else _regular_shape(_skeleton(text), len(values))
    elif flat:
        raise LiteralError("malformed number list")
    else:
        shape = None
    if shape is None:  # ragged, or not a list of numbers: the slow way says which
        return _nested_numbers(text, pos)
    return _number_array(text, values, shape, pos)


def plain_values(body: str) -> np.ndarray | None:
    """The numbers of `1, -2.5e3, nan, inf` as one float64 array (int64 when none is written
    as a float), or None when `body` is not such a list.

    numpy reads them in C, in one pass and one array, with no Python object per number and no
    regex (a regex with a repeated group keeps state per repetition: a 10M-number list took
    gigabytes). It reads what NUMBER reads: only its characters may appear (so no `NaN`,
    `0x1p3` or `infinity`), and every comma-separated part must be read whole."""
    if body.translate(_NOT_NUMBER_CHARS):
        return None
    if not body.strip():
        return np.zeros(0, np.float64)  # like any literal, an empty list is fp32
    count = body.count(",") + 1
    is_float = FLOAT_MARK.search(body) is not None
    if not is_float and _LONG_INT.search(body):  # past int64: the exact, slow way
        words = body.split(",")
        if not all(_INT_WORD.fullmatch(w) for w in words):
            return None
        longest = max(len(w.strip().lstrip("+-")) for w in words)
        if longest > lexemes.MAX_INT_DIGITS:
            raise LiteralError(f"an integer of {longest:,} digits is out of range")
        return np.array([int(w) for w in words], dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numpy warns, then stops, at a part it cannot read
        try:
            values = np.fromstring(body, dtype=np.float64 if is_float else np.int64, sep=",")
        except ValueError:
            return None
    return values if len(values) == count else None


def _number_array(text: str, values: np.ndarray, shape: tuple, pos) -> NumLit:
    if len(shape) > 64:
        raise LiteralError("list literal nested deeper than 64 levels")
    if values.dtype == object:
        try:
            values = values.astype(np.int64)
        except OverflowError:
            pass
    lit = NumLit(values, shape, "float" if values.dtype.kind == "f" else "int", pos)
    lit.token = text if isinstance(text, Token) else None
    return lit


def _nested_numbers(text: str, pos):
    """A nested number list the fast way did not take: its skeleton says whether it is a
    regular tensor, a List of lists (the place decides) or malformed."""
    words = NUMBER.findall(text)
    skeleton = WHITESPACE.sub("", NUMBER.sub("0", text))
    shape = _regular_shape(skeleton, len(words))
    if shape is None:
        return _nested_list(skeleton, words, pos)
    return _number_array(text, plain_values(",".join(words)), shape, pos)


def _regular_shape(skeleton: str, count: int) -> tuple | None:
    """The shape of a regular nesting from its skeleton (`[[0,0],[0,0]]`, a 0 for each number)
    holding `count` numbers, or None when the nesting is not regular. The first list of each
    level ends where that many brackets first close; a level's length follows from its first
    list's."""
    rank = len(skeleton) - len(skeleton.lstrip("["))
    ends = [skeleton.find("]" * (rank - k)) for k in range(rank)]
    if min(ends) < 0:
        return None
    lengths = [end + rank - 2 * k for k, end in enumerate(ends)]
    shape = [(lengths[-1] - 1) // 2]
    for k in range(rank - 2, -1, -1):
        shape.insert(0, (lengths[k] - 1) // (lengths[k + 1] + 1))
    shape = tuple(shape)
    if 0 in shape[:-1]:
        return None
    n = 1
    for d in shape:
        n *= d
    return shape if n == count and _skeleton_of(shape) == skeleton else None


def _skeleton(text: str) -> str:
    """The nesting of a number list, each number a 0: `[[0,0],[0,0]]`."""
    return _NUMBER_RUN.sub("0", text.translate(_NO_SPACE))


def _nested_list(skeleton: str, words: list, pos) -> ListLit:
    """A number list whose levels differ in length, as nested ListLits of its numbers."""
    try:
        nested = json.loads(skeleton)
    except ValueError:
        raise LiteralError("malformed number list") from None
    numbers = iter(words)

    def rebuild(item):
        if isinstance(item, list):
            return ListLit(rebuild(x) for x in item)
        word = next(numbers)
        return lexemes.parse_float(word) if FLOAT_MARK.search(word) else int(word)
    out = rebuild(nested)
    out.pos = pos
    return out


@lru_cache(maxsize=1024)
def _skeleton_of(shape: tuple) -> str:
    if not shape:
        return "0"
    if shape[0] == 0:
        return "[]"
    inner = _skeleton_of(shape[1:])
    return "[" + ",".join([inner] * shape[0]) + "]"
