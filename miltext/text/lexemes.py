"""Spelling of the smallest pieces of MIL text, shared by the parser and the printer:
strings and their escapes, names (bare or quoted), and numbers to the last bit."""
from __future__ import annotations

import re
from functools import lru_cache

from .. import packing
from ..dtypes import DType
from ..ir.values import decode_tensor
from ..lazy import numpy as np
from . import lexicon

# Words the grammar gives a meaning; a name spelled like one of them is printed quoted.
KEYWORDS = frozenset("""program model version doc List Tuple Dict State unknown Tensor Scalar blob
    immediate rank dict True False true false inf nan""".split()) | frozenset(
    lexicon.DTYPE_NAMES + lexicon.OTHER_DTYPE_WORDS + lexicon.STORAGE_WORDS)

_BARE_NAME = re.compile(lexicon.NAME + r"\Z")
_BARE_VAR = re.compile(lexicon.VAR_CHAR + r"+\Z")
_DTYPE_LIKE = re.compile(r"dtype[0-9]+\Z")
_PLAIN = re.compile(r'[^\\"\x00-\x1f\x7f-\x9f]*\Z')
_NEEDS_ESCAPE = re.compile(r'[\\"\x00-\x1f\x7f-\x9f]|[^\x00-\x7e]')
_SIMPLE_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)", re.S)
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "\\": "\\", '"': '"', "'": "'",
            "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


def _escape_char(m: re.Match) -> str:
    c = m.group()
    if c in _SIMPLE_ESCAPES:
        return _SIMPLE_ESCAPES[c]
    if c.isprintable():
        return c
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def quote(s: str) -> str:
    """A double-quoted string literal for any text; printable unicode stays as it is."""
    if _PLAIN.match(s) and s.isprintable():
        return f'"{s}"'
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, s) + '"'


def unquote(token: str) -> str:
    """The text of a quoted literal (double or single quotes, backslash escapes)."""
    body = token[1:-1]
    if "\\" not in body:
        return body

    def one(m: re.Match) -> str:
        e = m.group(1)
        if len(e) > 1:
            code = int(e[1:], 16)
            if code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
                raise _escape_error(f"\\{e} is not a unicode character", m.start() + 1)
            return chr(code)
        if e in _ESCAPED:
            return _ESCAPED[e]
        raise _escape_error(f"unknown escape \\{e} in a string (write \\\\ for a backslash)", m.start() + 1)

    return _UNESCAPE.sub(one, body)


def _escape_error(message: str, offset: int) -> ValueError:
    e = ValueError(message)
    e.offset = offset  # where the backslash stands in the quoted token
    return e


@lru_cache(maxsize=4096)
def name(s: str) -> str:
    """A function, op type, key or label name: bare when it is an identifier, else quoted."""
    if _BARE_NAME.match(s) and s not in KEYWORDS and not _DTYPE_LIKE.match(s):
        return s
    return quote(s)


def var(s: str) -> str:
    """A var reference or declaration: %name, or %"quoted name"."""
    return "%" + (s if _BARE_VAR.match(s) else quote(s))


def var_name(token: str) -> str:
    """The name a VAR token spells."""
    return unquote(token[1:]) if token[1:2] == '"' else token[1:]


# ---- numbers ------------------------------------------------------------------------------

class LiteralError(ValueError):
    """A literal that cannot be what its place asks for; the parser adds the position."""


class NanBits(int):
    """A NaN with explicit bits, `nan(0x7fc00001)`, in the width of the dtype it lands in."""


# No MIL integer needs more digits (uint64 has 20); longer ones are refused before Python's own
# limit on converting them (4,300 digits) is reached.
MAX_INT_DIGITS = 40


def parse_int(token: str) -> int:
    t = token.lstrip("+")
    neg = t.startswith("-")
    t = t.lstrip("-")
    if len(t) > MAX_INT_DIGITS:
        raise LiteralError(f"an integer of {len(t):,} digits is out of range")
    n = int(t, 16) if t[:2] in ("0x", "0X") else int(t)
    return -n if neg else n


def parse_float(token: str) -> float:
    t = token.lower()
    if "0x" in t:
        return float.fromhex(t)
    return float(t)


def _shortest(v) -> str:
    """Fewest digits that identify `v` in its own precision, laid out as Python's repr lays
    out a float: positional from 1e-4 to 1e16, scientific outside."""
    f = float(v)
    if not np.isfinite(f):
        return str(f)
    if f == 0 or 1e-4 <= abs(f) < 1e16:
        return np.format_float_positional(v, unique=True, trim="0")
    return np.format_float_scientific(v, unique=True, trim="-")


def format_floats(dtype: DType, bits: np.ndarray) -> list[str]:
    """The shortest decimal of each element that reads back to the same bits in `dtype`;
    NaNs other than the dtype's default spell their bits: nan(0x7fc00001)."""
    values = packing.bits_to_float(dtype, bits)
    if dtype.name == "fp64":
        out = [repr(v) for v in values.tolist()]
    else:
        out = values.astype(str).tolist()  # numpy's shortest repr, in one call
        for i, text in enumerate(out):
            if "e" in text and 1e-4 <= abs(float(values[i])) < 1e16:
                out[i] = _shortest(values[i])  # positional, as Python's repr would have it
        # Decimal -> double -> dtype can round twice; where that lands elsewhere, print the
        # double's repr, which is exact for every narrower float.
        with np.errstate(over="ignore", invalid="ignore"):
            back = np.array(out, dtype=np.float64).astype(values.dtype)
        wrong = (packing.float_bits(dtype, back) != bits) & ~np.isnan(values)
        if wrong.any():
            for i in np.nonzero(wrong)[0].tolist():
                out[i] = repr(float(values[i]))
    nan = np.isnan(values)
    if nan.any():
        nan = np.nonzero(nan)[0]
        canonical = packing.CANONICAL_NAN_BITS[dtype.name]
        width = bits.dtype.itemsize * 2
        for i in nan.tolist():
            b = int(bits[i])
            out[i] = "nan" if b == canonical else f"nan(0x{b:0{width}x})"
    return out


def stored_elements(dt, data, count):
    """A tensor's elements (its TensorData) as both dialects' literals write them: raw bits
    for floats (so every NaN keeps its payload), values otherwise; None when the storage does
    not hold whole elements of `dt`."""
    if data.field == "bytes":
        raw = data.values
        if dt.sub_byte:
            return None if count is None else packing.unpack(dt, raw, count)
        width = dt.bits // 8
        if not width or len(raw) % width:
            return None
        if dt.kind == "float":
            return np.frombuffer(raw, np.dtype(packing.BITS_DTYPE[dt.name]).newbyteorder("<")).astype(
                packing.BITS_DTYPE[dt.name])
        return packing.unpack(dt, raw)
    if dt.kind == "float":
        return data.values.view(packing.BITS_DTYPE[dt.name])
    if dt.kind == "string":
        return data.values
    return decode_tensor(dt, data, count)


def nested(scalars: list, shape: tuple) -> str:
    """Element texts as the nested list of `shape`: [[1, 2], [3, 4]]."""
    if len(shape) == 1:
        return "[" + ", ".join(scalars) + "]"
    step = len(scalars) // shape[0] if shape[0] else 0
    return "[" + ", ".join(nested(scalars[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])) + "]"


def element_texts(dt: DType, elements, model_mil: bool = False) -> list[str]:
    """Each element of a tensor as a literal writes it (floats as raw bits, see stored_elements):
    miltext's spelling, or with `model_mil` the spelling of Apple's model.mil (exact hex floats,
    lower-case bools; ValueError for a NaN hex cannot spell)."""
    if dt.kind == "float":
        return format_hex_floats(dt, elements) if model_mil else format_floats(dt, elements)
    if dt.kind == "bool":
        words = ("false", "true") if model_mil else ("False", "True")
        return [words[bool(b)] for b in elements.tolist()]
    if dt.kind == "string":
        return [quote(s) for s in elements]
    return [str(i) for i in elements.tolist()]


def hex_float(f: float) -> str:
    """A float as C's printf("%a") writes it on Apple's platforms (model.mil's spelling): the
    exact value in hex, no trailing zero digits, subnormals normalized: 0x1p+0, -0x1.388p+13,
    0x0p+0, inf, nan."""
    if f != f:
        return "nan"
    if f in (float("inf"), float("-inf")):
        return "inf" if f > 0 else "-inf"
    text = f.hex()  # [-]0x1.8000000000000p+0; a subnormal double is 0x0.0000000000001p-1022
    sign = "-" if text[0] == "-" else ""
    mantissa, exponent = text.lstrip("-")[2:].split("p")
    lead, _, fraction = mantissa.partition(".")
    exponent = int(exponent)
    if lead == "0" and fraction.strip("0"):
        bits = int(fraction, 16)        # 52 fraction bits; the value is bits * 2**(exponent - 52)
        top = bits.bit_length() - 1
        exponent += top - 52
        width = (top + 3) // 4
        fraction = format((bits - (1 << top)) << (width * 4 - top), f"0{width}x") if top else ""
        lead = "1"
    fraction = fraction.rstrip("0")
    return f"{sign}0x{lead}{'.' + fraction if fraction else ''}p{exponent:+d}"


def format_hex_floats(dtype: DType, bits: np.ndarray) -> list[str]:
    """Each element in hex (hex_float), exact in any float dtype; a NaN is `nan` only when it is
    the dtype's default NaN, and any other NaN raises ValueError (hex cannot spell its bits)."""
    values = packing.bits_to_float(dtype, bits)
    nan = np.isnan(values)
    if nan.any():
        canonical = packing.CANONICAL_NAN_BITS[dtype.name]
        for i in np.nonzero(nan)[0].tolist():
            if int(bits[i]) != canonical:
                width = bits.dtype.itemsize * 2
                raise ValueError(f"the {dtype.name} NaN 0x{int(bits[i]):0{width}x}, which is not the "
                                 f"default NaN 0x{canonical:0{width}x} that nan stands for")
    return [hex_float(v) for v in values.tolist()]
