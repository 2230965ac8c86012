"""Number lists read in one go: `[1, 2]`, `[[0.5, -1.0], [2.0, nan]]` as one NUMBERS token,
converted by numpy, with the shape read off the brackets."""
from __future__ import annotations

import json
import re

import numpy as np
from lark import Token

from . import lexemes
from .literals import ELIDED, ListLit, LiteralError, NumLit

NUMBER = re.compile(r"[-+]?(?:inf|nan|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)")
FLOAT_MARK = re.compile(r"[.eEni]")
WHITESPACE = re.compile(r"\s+")
_FLAT_SEPARATORS = re.compile(r"\s*(,\s*)*")


def read_numbers(text: str, pos) -> NumLit:
    """A NUMBERS token: the numbers converted in one go, the shape read off the brackets."""
    if "..." in text:
        if text[1:-1].strip() == "...":
            return ELIDED
        raise LiteralError("malformed number list")
    words = NUMBER.findall(text)
    if text.count("[") == 1:  # the common flat list: its shape is its length
        commas = NUMBER.sub("", text[1:-1])
        if not _FLAT_SEPARATORS.fullmatch(commas) or commas.count(",") != max(len(words) - 1, 0):
            raise LiteralError("malformed number list")
        shape = (len(words),)
    else:
        skeleton = WHITESPACE.sub("", NUMBER.sub("0", text))
        shape = _nesting_shape(skeleton)
        if shape is None:  # not a tensor; maybe a List of lists: the place decides
            return _nested_list(skeleton, words, pos)
    if len(shape) > 64:
        raise LiteralError("list literal nested deeper than 64 levels")
    if FLOAT_MARK.search(text) or not words:  # like any literal, an empty list is fp32
        array = np.array([float(w) for w in words] if len(words) < 64 else np.array(words).astype(np.float64),
                         dtype=np.float64)
        kind = "float"
    else:
        values = [int(w) for w in words]
        try:
            array = np.array(values, dtype=np.int64)
        except OverflowError:
            array = np.array(values, dtype=object)
        kind = "int"
    lit = NumLit(array, shape, kind, pos)
    lit.token = text if isinstance(text, Token) else None
    return lit


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


def _nesting_shape(skeleton: str) -> tuple | None:
    """The shape of a list skeleton such as [[0,0],[0,0]], or None when it is not regular."""
    rank = len(skeleton) - len(skeleton.lstrip("["))
    shape = []
    at = 0
    for level in range(rank):
        at = level + 1  # just inside the first list of this level
        if skeleton[at] == "]":
            shape.append(0)
            break
        depth, count, i = 0, 1, at
        while True:
            c = skeleton[i]
            if c == "[":
                depth += 1
            elif c == "]":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                count += 1
            i += 1
        shape.append(count)
    shape = tuple(shape)
    return shape if _skeleton_of(shape) == skeleton else None


def _skeleton_of(shape: tuple) -> str:
    if not shape:
        return "0"
    if shape[0] == 0:
        return "[]"
    inner = _skeleton_of(shape[1:])
    return "[" + ",".join([inner] * shape[0]) + "]"
