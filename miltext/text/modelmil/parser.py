"""model.mil text → object model, with Lark's LALR parser over grammar/modelmil.lark and one
transformer method per rule (the transformer runs inside the parser; no tree is built).

model.mil is the MIL text Core ML's compiler writes into a compiled model (docs/modelmil.md).
It reads into the same Program, Function, Block, Operation and Value objects as miltext's own
text: `ios17` becomes the opset `CoreML7`, the one block of a function is its block for that
opset, and `[name = ..., val = ...]` are the op's attributes.
"""
from __future__ import annotations

import re
import threading
from sys import intern  # a name is written many times (declared, read, the op's name): hold it once

from lark import Lark
from lark.exceptions import UnexpectedInput

from ... import dtypes
from ...bulk import bulk
from ...errors import ParseError
from ...ir import Blob, Block, DictData, DictType, Function, ListData, ListType, Operation, Program, StateType, TensorData, TensorType, TupleData, TupleType, Value, Var
from ...ir.values import encode_tensor
from .. import lexemes
from ..building import Attrs, Bindings, TextBuilder, fail, located
from ..grammars import cache_path, grammar_text
from ..literals import DictLit, Group, ListLit, LiteralError, _flatten, elements
from ..messages import describe_expected
from ..options import READ, ReadOptions
from ..parse_errors import BuildFailure, LocatedError, collect_errors, place_of, source_line
from .words import KEYWORDS, OPSET_OF_IOS, looks_like_modelmil, name_problem, op_type_problem

# What parse_fragment reads: a whole op line, an op's call, a type, a typed value.
FRAGMENTS = ("operation", "call", "type", "value")


class _Outputs(list):
    pass


class _Call:
    __slots__ = ("type", "inputs", "loc")

    def __init__(self, op_type: str, inputs: dict, loc):
        self.type, self.inputs, self.loc = op_type, inputs, loc


def _name(tok) -> str:
    """A name token as a str, refused in the printer's words when the printer could not write
    it back (a dtype or another of the dialect's words that the grammar let through)."""
    if tok in KEYWORDS:
        fail(f"model.mil cannot express {name_problem(str(tok))}", place_of(tok))
    return intern(str(tok))


class _Builder(TextBuilder):
    """Builds the object model as the parser reduces rules."""

    def __init__(self):
        super().__init__()
        self.plain_types: dict = {}  # TENSOR_TYPE text -> its TensorType: real files repeat a few
        self.scalar_types: dict = {}  # dtype -> the TensorType of its scalars
        self.op_factory = None       # ReadOptions.op_factory of the parse under way

    # ---- program structure ----
    def start(self, items):
        program = Program(modelmil_version=str(items[0]))  # the proto has no place for it
        for item in items[1:]:
            if type(item) is Attrs:
                program.attributes = dict(item)
            else:
                name, fn = item
                if name in program.functions:
                    fail(f"function {str(name)!r} is defined twice", place_of(name))
                program.functions[str(name)] = fn
        return program

    def function(self, items):
        name, ios = items[0], items[1]
        _name(name)
        opset = OPSET_OF_IOS.get(str(ios))
        if opset is None:
            fail(f"unknown opset {str(ios)!r}: model.mil's opsets are {', '.join(OPSET_OF_IOS)}", place_of(ios))
        inputs, attrs, ops, outputs = [], {}, [], []
        for item in items[2:]:
            kind = type(item)
            if kind is Var:
                inputs.append(item)
            elif isinstance(item, Operation):
                ops.append(item)
            elif kind is Attrs:
                attrs = dict(item)
            else:
                outputs.append(_name(item))
        block = Block(outputs=outputs, operations=ops, loc=place_of(name))
        return name, Function(inputs=inputs, opset=opset, blocks={opset: block}, attributes=attrs,
                              loc=place_of(name))

    def param(self, items):
        vtype, name = items
        return Var(_name(name), vtype, loc=place_of(name))

    def outputs(self, items):
        return _Outputs(items)

    def operation(self, items):
        outputs, call, attrs, blocks = [], None, {}, []
        for item in items:
            kind = type(item)
            if kind is _Call:
                call = item
            elif kind is _Outputs:
                outputs = list(item)
            elif kind is Attrs:
                attrs = dict(item)
            else:
                blocks.append(item)
        problem = op_type_problem(call.type, bool(outputs))
        if problem:
            fail(f"model.mil cannot express {problem}", call.loc)
        op = Operation(type=call.type, inputs=call.inputs, outputs=outputs, blocks=blocks,
                       attributes=attrs, loc=outputs[0].loc if outputs else call.loc)
        return op if self.op_factory is None else self.op_factory(op)

    def call(self, items):
        name, inputs = items[0], {}
        for key, bindings in items[1:]:
            if key in inputs:
                fail(f"input {str(key)!r} is given twice", place_of(key))
            inputs[_name(key)] = bindings
        return _Call(_name(name), inputs, place_of(name))

    def argument(self, items):
        key, binding = items
        return key, list(binding) if type(binding) is Bindings else [binding]

    def ref(self, items):
        return _name(items[0])

    def bindings(self, items):
        return Bindings(items)

    def block(self, items):
        inputs, ops, outputs = [], [], []
        for item in items[1:]:  # items[0] is the `block` keyword
            kind = type(item)
            if kind is Var:
                inputs.append(item)
            elif isinstance(item, Operation):   # or what ReadOptions.op_factory made of one
                ops.append(item)
            else:
                outputs.append(_name(item))
        return Block(inputs, outputs, ops, loc=place_of(items[0]))

    op_attributes = TextBuilder.attributes

    def _attribute_name(self, key) -> str:
        return _name(key)

    def attribute(self, items):
        return items[0], items[1]

    # ---- types ----
    def plain_tensor_type(self, items):
        """A TENSOR_TYPE token: tensor<fp32, [1, ?]> in one piece."""
        tok = items[0]
        known = self.plain_types.get(tok)
        if known is None:
            dtype, dims = _PLAIN_TYPE.match(tok).groups()
            known = self.plain_types[str(tok)] = TensorType(dtype, tuple(
                None if d == "?" else int(d) for d in _WHITESPACE.sub("", dims).split(",") if d))
        return known  # shared: types are never changed in place

    def tensor_type(self, items):
        return TensorType(str(items[0]), tuple(items[1:]))

    def unknown_dim(self, items):
        return None

    def list_type(self, items):
        return ListType(items[0], items[1])

    def tuple_type(self, items):
        return TupleType(list(items))

    def dict_type(self, items):
        return DictType(items[0], items[1])

    def state_type(self, items):
        return StateType(items[0])

    # ---- values ----
    def scalar_value(self, items):
        """A SCALAR_VALUE token: a rank-0 value of a plain literal, tensor<int32, []>(1) or int32(1)."""
        tok = items[0]
        m = _SCALAR_VALUE.match(tok)
        dtype, text = m.group(1) or m.group(2), m.group(3)
        vtype = self.scalar_types.get(dtype)
        if vtype is None:
            vtype = self.scalar_types[dtype] = TensorType(dtype)   # shared, as types are
        if text[0] == '"':
            try:
                return Value(vtype, literal_data(vtype, intern(lexemes.unquote(text))))
            except ValueError as e:  # a bad escape, or a string where the dtype is not string
                offset = m.start(3) + getattr(e, "offset", 0)
                fail(str(e), (tok.line, tok.column + offset))
        if text == "true" or text == "false":
            lit = text == "true"
        elif _FLOAT_MARK.search(text):
            lit = lexemes.parse_float(text)
        else:
            lit = int(text)
        try:
            return Value(vtype, literal_data(vtype, lit))
        except LiteralError as e:
            fail(str(e), (tok.line, tok.column + m.start(3)))

    def value(self, items):
        vtype, lpar, data = items
        if type(data) is Blob:
            return Value(vtype, data)
        try:
            return Value(vtype, literal_data(vtype, data))
        except LiteralError as e:
            fail(str(e), place_of(lpar))
        except RecursionError:
            fail("this value is nested too deeply", place_of(lpar))

    def blobfile(self, items):
        keyword, args = items[0], {}
        for key, value in items[1:]:
            if str(key) not in ("path", "offset") or str(key) in args:
                fail(f"unexpected {str(key)!r}: BLOBFILE takes path = and offset =, once each", place_of(key))
            args[str(key)] = value
        if len(args) < 2:
            fail("BLOBFILE takes path = string(\"...\") and offset = uint64(...)", place_of(keyword))
        path, offset = _scalar(args["path"], "string"), _scalar(args["offset"], "int")
        if path is None or offset is None or offset < 0:
            fail("BLOBFILE takes a string path and an offset that is a non-negative integer", place_of(keyword))
        return Blob(offset, path)

    def blob_argument(self, items):
        return items[0], items[1]

    # literals: plain Python data and the list, tuple and dict classes of .literals
    def tuple_lit(self, items):
        return Group(items[1:])

    def pair(self, items):
        return items[0], items[1]


# The parts of the shortcut tokens of grammar/modelmil.lark, which have already matched whole.
_PLAIN_TYPE = re.compile(r"tensor\s*<\s*(\w+)\s*,\s*\[([^\]]*)\]")
_SCALAR_VALUE = re.compile(r'(?:tensor\s*<\s*(\w+)\s*,\s*\[\s*\]\s*>|(\w+))\s*\(\s*(.*?)\s*\)\Z', re.S)
_FLOAT_MARK = re.compile(r"[.eExXpPn]")
_WHITESPACE = re.compile(r"\s+")


def _scalar(v: Value, kind: str):
    """The one element of a rank-0 string (kind "string") or integer (kind "int") value."""
    t = v.type
    if type(v.data) is not TensorData or type(t) is not TensorType or t.shape or dtypes.by_name(t.dtype).kind not in (
            ("string",) if kind == "string" else ("int", "uint")):
        return None
    values = v.data.values
    return values[0] if kind == "string" else int(values[0])


def literal_data(vtype, lit):
    """The data of literal `lit` under `vtype`, as model.mil reads it: a tensor literal nests
    as its type's shape says, and each element of a list, tuple or dict takes its type from the
    container's type (the element Values share that type)."""
    kind = type(vtype)
    if kind is StateType and type(vtype.wrapped) is TensorType:
        vtype, kind = vtype.wrapped, TensorType
    if kind is TensorType:
        if isinstance(lit, (Group, DictLit)):
            raise LiteralError("tensor data is a number, a string, true, false or a [list] of them")
        scalars, shape = _flatten(lit)
        if not _fits(shape, vtype.shape):
            raise LiteralError(f"a literal of shape {_dims(shape)} where the type says {_dims(vtype.shape)}")
        dt = dtypes.by_name(vtype.dtype)
        return encode_tensor(dt, elements(dt, scalars))
    if kind is ListType:
        if type(lit) is not ListLit:
            raise LiteralError("a list value is written [v, ...]")
        return ListData([Value(vtype.element, literal_data(vtype.element, x)) for x in lit])
    if kind is TupleType:
        if type(lit) is not Group or len(lit) != len(vtype.types):
            raise LiteralError(f"a tuple of {len(vtype.types)} is written ({', '.join(['v'] * len(vtype.types))})")
        return TupleData([Value(t, literal_data(t, x)) for t, x in zip(vtype.types, lit)])
    if kind is DictType:
        if type(lit) is not DictLit:
            raise LiteralError("a dict value is written {{key, value}, ...}")
        return DictData([(Value(vtype.key, literal_data(vtype.key, k)),
                          Value(vtype.value, literal_data(vtype.value, v))) for k, v in lit])
    raise LiteralError("a value of this type has no literal")


def _fits(nesting: tuple, shape: tuple) -> bool:
    """Whether a literal's nesting is `shape`: `?` fits any size, and an empty list `[]` stands
    for all the dims from its place on (for [2, 0, 3], [[], []] is the whole literal)."""
    if len(nesting) < len(shape) and nesting and nesting[-1] == 0:
        shape = shape[:len(nesting)]
    return len(nesting) == len(shape) and all(d is None or d == n for n, d in zip(nesting, shape))


def _dims(shape: tuple) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


# ---- the parser ---------------------------------------------------------------------------------

class _Parser:
    def __init__(self):
        grammar = grammar_text("modelmil.lark")
        self.builder = _Builder()
        self.lark = Lark(grammar, parser="lalr", lexer="contextual",
                         transformer=self.builder, start=["start", *FRAGMENTS], maybe_placeholders=False,
                         cache=cache_path("modelmil", grammar))
        self.lock = threading.Lock()


_PARSER: list = []


def _parser() -> _Parser:
    if not _PARSER:
        _PARSER.append(_Parser())
    return _PARSER[0]


# Tokens that start a type: a message says "a type", not each of them.
_TYPE_START = frozenset(["TENSOR", "LIST", "TUPLE", "DICT", "STATE", "DTYPE", "TENSOR_TYPE"])
_VALUE_START = frozenset(["SCALAR_VALUE", "SIGNED_INT", "FLOAT", "SPECIAL_FLOAT", "STRING", "TRUE", "FALSE"])


def _describe(names) -> str:
    names = set(names)
    if names & _TYPE_START:
        names = (names - _TYPE_START) | {"MODELMIL_TYPE"}
    if "NAME" in names and names & (_VALUE_START | {"MODELMIL_TYPE"}):
        names = (names - {"NAME"}) | {"MODELMIL_REF"}  # a var where a value could be
    return describe_expected(names, _parser().lark)


def _parse_once(text: str, start: str = "start", options: ReadOptions = READ):
    parser = _parser()
    try:
        with parser.lock, bulk():
            parser.builder.op_factory = options.op_factory
            try:
                return parser.lark.parse(text, start=start)
            finally:
                parser.builder.op_factory = None
    except (BuildFailure, UnexpectedInput, RecursionError) as e:
        raise located(e, text, _describe) from None


def parse(text: str, filename: str | None = None, options: ReadOptions = READ) -> Program:
    """Parse model.mil text; raise ParseError (with every error found, as for miltext's text).
    (The dialect writes every blob offset: options.resolve_blob_offsets changes nothing.)"""
    program = collect_errors(text, filename, lambda attempt: _parse_rest(attempt, options))
    program.modelmil_ending = _ENDING.search(text).group()
    return program


_ENDING = re.compile(r"[ \t\r\n\f]*\Z")  # what the grammar skips as whitespace


def _parse_rest(text: str, options: ReadOptions = READ):
    """_parse_once, also after collect_errors took out a line at fault to look for more: when
    that took the header, there is nothing more to find."""
    return _parse_once(text, options=options) if looks_like_modelmil(text) else Program()


def parse_fragment(text: str, what: str, filename: str | None = None, options: ReadOptions = READ):
    """One piece of model.mil: an `operation` (a whole op line, `;` included) as an Operation,
    a `call` (`add(x = x, y = y)`) as (op type, inputs), a `type`, or a typed `value`."""
    if what not in FRAGMENTS:
        raise ValueError(f"what is one of {', '.join(FRAGMENTS)}, not {what!r}")
    try:
        out = _parse_once(text, what, options)
    except LocatedError as e:
        raise ParseError(e.message, e.line, e.column, filename, source_line(text, e.line), None, text) from None
    return (out.type, out.inputs) if type(out) is _Call else out
