"""The transformer that builds the object model as Lark's LALR parser reduces the rules of
grammar/mil.lark: one method per rule (or alias), no parse tree in between."""
from __future__ import annotations

import re
from sys import intern  # a var name is used many times and mostly equals its op's name: hold it once

from lark import Token

from ... import dtypes
from ...ir import UNSET_DIM, VARIADIC, Blob, Block, DictData, DictType, Function, ListType, Operation, Program, StateType, TensorType, TupleType, UnknownType, Value, Var, WeightRef
from ...ir.types import MISSING, NO_ATTRIBUTES
from .. import blob_layout, lexemes, lexicon
from ..building import Attrs, Bindings, TextBuilder
from ..literals import ABSENT, B64, ELIDED, EMPTY_IMMEDIATE, DictLit, Group, LiteralError, NumLit, Ref, default_value, prepared, storage_escape, string_value, typed_value
from ..numbers import FLOAT_MARK, NUMBER, WHITESPACE, read_numbers
from ..parse_errors import BuildFailure, place_of
from ..section_syntax import Call, Feature, Section

MAX_BLOCK_DEPTH = 256  # nested blocks; documented in docs/syntax.md
MAX_TYPE_DEPTH = 64    # nested List/Tuple/Dict/State types


def _offset_pos(tok, offset: int) -> tuple:
    """The place of character `offset` of a token that may span lines."""
    before = tok[:offset]
    newlines = before.count("\n")
    if not newlines:
        return (tok.line, tok.column + offset)
    return (tok.line + newlines, offset - before.rindex("\n"))



MAX_DIM = (1 << 64) - 1  # MIL.proto's dimension sizes are uint64

class _Name(str):
    """A name with the place it was written."""
    __slots__ = ("line", "column")


class _Opset(str):
    pass


class _Run(list):
    """Consecutive ops read from one SIMPLE_OPS token."""


class _Symbol(str):
    """A bare name inside parentheses: a symbolic dim such as is0 (or numpy's np.True_)."""
    pos = None


def _unknown_in_print(lit) -> bool:
    """Whether coremltools' print shows a value it did not know: one known only by symbols,
    such as (s0, s1, 2) or [2*is0, 3], or coremltools 4's (file_value) for a value in a file."""
    if isinstance(lit, _Symbol) or isinstance(lit, _Item) and lit.kind == "dim":
        return True
    return isinstance(lit, (list, tuple)) and any(_unknown_in_print(x) for x in lit)


class _Item:
    """A type-only item of a parenthesized list: ?, *, _, ..., a dtype, dict, rank=N."""
    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value=None):
        self.kind, self.value = kind, value


class _Data:
    __slots__ = ("item", "doc")

    def __init__(self, item, doc: str):
        self.item, self.doc = item, doc


class _BlockNode:
    __slots__ = ("block", "key", "label", "outputs_pos")

    def __init__(self, block, key, label):
        self.block, self.key, self.label = block, key, label


_ABSENT_TYPE = object()
_DIM_WORDS = {"?": None, "*": VARIADIC, "_": UNSET_DIM}
_NUMPY_BOOLS = {"np.True_": True, "np.False_": False, "numpy.True_": True, "numpy.False_": False}


def _absent_to_none(t):
    return None if t is _ABSENT_TYPE else t


class _Builder(TextBuilder):
    """Builds the object model as the parser reduces rules."""

    def __init__(self, raw_strings: bool):
        super().__init__()
        self.raw_strings = raw_strings
        self.current = None  # the token the lexer handed over last (a fallback place for errors)
        self.type_depth: dict = {}  # id(composite type) -> how deep it nests, during one parse
        self.simple_types: dict = {}  # TENSOR_TYPE text -> its TensorType, shared: types repeat
        self.tensor_types: dict = {}  # (dtype, shape, rank) -> the one TensorType of vars and values
        self.implied_blobs = False    # a `blob` without its offset was read (blob_layout fills them in)
        self.options = None           # the text.dialects.ReadOptions of the parse under way

    # ---- helpers ----
    def _value(self, lit, pos=None) -> Value:
        try:
            return self._one_type(default_value(lit))
        except LiteralError as e:
            self._fail(str(e), _element_pos(lit, e) or getattr(lit, "pos", None) or pos)
        except RecursionError:
            self._fail("this value is nested too deeply", getattr(lit, "pos", None) or pos)

    def _one_type(self, value: Value) -> Value:
        """`value` with the one instance of its tensor type this parse holds: a program has
        thousands of consts of a few types (and a type is never changed in place)."""
        t = value.type
        if type(t) is TensorType and t.attributes is NO_ATTRIBUTES:
            value.type = self.tensor_types.setdefault((t.dtype, t.shape, t.rank), t)
        return value

    # ---- program structure ----
    def start(self, items):
        program, model = Program(), None
        implied, self.implied_blobs = self.implied_blobs, False
        for item in items:
            if isinstance(item, Section):
                model = item
            elif isinstance(item, tuple) and item[0] == "header":
                _, version, doc, attrs, unknown = item
                program.version, program.doc, program.attributes = version, doc, attrs
                program.unknown_fields = unknown
            else:
                name, fn = item
                if name in program.functions:
                    self._fail(f"function {name!r} is defined twice", place_of(name))
                program.functions[str(name)] = fn
        if implied and self.options.resolve_blob_offsets:   # else the reader works them out
            at = blob_layout.fill_in(program)
            if at is not None:
                self._fail(blob_layout.NOT_IMPLIED, at)
        return program if model is None else (model, program)

    # ---- the model section: plain items, which miltext.model.section gives a meaning ----
    def model(self, items):
        call = items[0]
        call.name = "model"
        return Section(call, items[1] if len(items) > 1 else None)

    def model_body(self, items):
        return list(items)

    def feature(self, items):
        kind, var, vtype = items
        return Feature(str(kind), self._var_name(var), _absent_to_none(vtype), loc=place_of(kind))

    def section(self, items):
        return Section(self._named(items[0], items[1]), items[2] if len(items) > 2 else None)

    def call_type(self, items):
        return self._named(items[0], items[1])

    def _named(self, name, call: Call) -> Call:
        call.name, call.loc = str(name), place_of(name)
        return call

    def call(self, items):
        out = Call("")
        for item in items:
            if item is None:
                continue
            _, key, payload = item
            if isinstance(payload, list):  # an input binding: only a single value means anything here
                if len(payload) != 1 or not isinstance(payload[0], Value):
                    self._fail(f"{str(key)}= takes a value here", place_of(key))
                payload = payload[0]
            if key in out.args:
                self._fail(f"{str(key)!r} is given twice", place_of(key))
            out.args[str(key)] = payload
            out.arg_locs[str(key)] = place_of(key)
        return out

    def header(self, items):
        version, doc, attrs, unknown = 1, "", {}, {}
        for item in items:
            if isinstance(item, Attrs):
                attrs = dict(item)
            elif isinstance(item, tuple):
                if item[0] == "version":
                    version = item[1]
                elif item[0] == "unknown":
                    unknown = item[1]
                else:
                    doc = item[1]
        return ("header", version, doc, attrs, unknown)

    def header_unknown(self, items):
        """unknownFields=Dict[(string), (?, uint8)]({"PATH": [bytes...]}): miltext.ir.unknown."""
        value = items[0]
        data, vtype = getattr(value, "data", None), getattr(value, "type", None)
        if not (type(vtype) is DictType and vtype.key == TensorType("string")
                and vtype.value == TensorType("uint8", (None,)) and type(data) is DictData):
            self._fail("unknownFields is Dict[(string), (?, uint8)]({\"PATH\": [BYTE, ...], ...}): the "
                       "bytes of fields this schema does not know, by the path of their message", None)
        return ("unknown", {k.data.values[0]: bytes(v.data.values) for k, v in data.items})

    def header_version(self, items):
        return ("version", self._int(items[0]))

    def header_doc(self, items):
        return ("doc", self._text(items[0]))

    @staticmethod
    def _signature(items) -> tuple:
        """What a function's or a block's name is followed by: its opset (or None), inputs and
        attributes, and the items after them in order."""
        opset, inputs, attrs, rest = None, [], {}, []
        for item in items:
            if isinstance(item, _Opset):
                opset = item
            elif isinstance(item, Var):
                inputs.append(item)
            elif isinstance(item, Attrs):
                attrs = dict(item)
            else:
                rest.append(item)
        return opset, inputs, attrs, rest

    def function(self, items):
        name = items[0]
        opset, inputs, attrs, rest = self._signature(items[1:])
        opset = "" if opset is None else str(opset)
        fn = Function(inputs=inputs, opset=opset, attributes=attrs, loc=place_of(name))
        for node in (item for item in rest if isinstance(item, _BlockNode)):
            key = opset if node.key is None else str(node.key)
            if key in fn.blocks:
                self._fail(f"function {str(name)!r} has two blocks for opset {key!r}; "
                           f"mark the others with their opset, e.g. {node.label}[CoreML7]()",
                           place_of(node.label))
            fn.blocks[key] = node.block
        return (name, fn)

    def opset(self, items):
        return _Opset(items[0] or "")

    def block(self, items):
        label, ops, outputs = items[0], [], []
        key, inputs, attrs, rest = self._signature(items[1:])
        for item in rest:
            if isinstance(item, Operation):
                ops.append(item)
            elif isinstance(item, _Run):
                ops.extend(item)
            elif isinstance(item, _BlockNode):
                if not ops:
                    self._fail("a nested block must follow the op that owns it", place_of(item.label))
                if item.key is not None:
                    self._fail("only a function's blocks are marked with an opset", place_of(item.label))
                ops[-1].blocks = [*ops[-1].blocks, item.block]   # a compact op becomes ordinary
            elif isinstance(item, Token):
                outputs.append(self._var_name(item))
        return _BlockNode(Block(inputs, outputs, ops, attrs, loc=place_of(label)), key, label)

    def fragment(self, items):
        """Ops (each with the blocks it owns) read alone: their blobs' offsets are left to the
        reader, who knows the blobs before them."""
        self.implied_blobs = False
        return self.block([None, *items]).block.operations

    def operation(self, items):
        outputs, name, args, attrs = [], None, [], None
        for item in items:
            if isinstance(item, Var):
                outputs.append(item)
            elif isinstance(item, _Name):
                name = item
            elif isinstance(item, tuple):
                args.append(item)
            elif isinstance(item, Attrs):
                attrs = item
        op = Operation(type=str(name), outputs=outputs,
                       loc=outputs[0].loc if outputs else place_of(name))
        for kind, key, payload in args:
            target = op.inputs if kind == "input" else op.attributes
            if key in target:
                what = "input" if kind == "input" else "attribute"
                self._fail(f"{what} {str(key)!r} is given twice", place_of(key))
            target[str(key)] = payload
        if attrs:
            for key, value in attrs.items():
                if key in op.attributes:
                    self._fail(f"attribute {key!r} is given twice", getattr(attrs, "pos", {}).get(key))
                op.attributes[key] = value
        return op if self.options.op_factory is None else self.options.op_factory(op)

    def simple_ops(self, items):
        """A SIMPLE_OPS token: one op per line, each built by simple_op."""
        tok = items[0]
        line, column = tok.line, tok.column
        ops = []
        start, end = 0, len(tok)
        while start < end:  # line by line, without a list of every line of a big run
            stop = tok.find("\n", start)
            if stop < 0:
                stop = end
            text = tok[start:stop]
            stripped = text.strip()
            if stripped:
                op = self.simple_op(stripped, line, column + len(text) - len(text.lstrip()))
                ops.append(op if self.options.op_factory is None else self.options.op_factory(op))
            line, column, start = line + 1, 1, stop + 1
        return _Run(ops)

    def simple_op(self, text: str, line: int, column: int) -> Operation:
        """One plain op line, built directly, since this is the line most programs are made of:
        its parts split by regex and read with the long way's rules (a literal is a value; `name`
        and `val` are attributes, anything else an input). A mistake, or a key given twice, is
        left to _simple_op_parts, which knows where each part stands."""
        head = _SIMPLE_HEAD.match(text)
        out, type_token, op_type = head.groups()
        inputs, attributes = {}, {}
        for key, raw in _SIMPLE_ARG.findall(text, head.end(), len(text) - 1):
            first = raw[0]
            if first == "%":
                target, payload = inputs, [intern(raw[1:])]
            else:
                try:
                    if first == '"' or first == "[":  # the commonest literals, straight to values
                        value = string_value(intern(raw[1:-1])) if first == '"' else \
                            self._one_type(default_value(read_numbers(raw, None)))
                        target, payload = (attributes, value) if key in ("name", "val") else (inputs, [value])
                    else:
                        kind, key, payload = self.argument([key, self._simple_value(raw, line, column)])
                        target = inputs if kind == "input" else attributes
                except (LiteralError, BuildFailure):
                    return self._simple_op_parts(text, line, column)
            if key in target:
                return self._simple_op_parts(text, line, column)
            target[intern(key)] = payload
        loc = (line, column)
        type_at = (line, column + head.start(2))
        return Operation(intern(op_type), inputs, [Var(intern(out), self._simple_type(type_token, type_at), loc=loc)], [],
                         attributes, loc)

    def _simple_op_parts(self, text: str, line: int, column: int) -> Operation:
        """A plain op line part by part, with the long way's rules (argument, _value) and
        places for its errors."""
        head = _SIMPLE_HEAD.match(text)
        loc = (line, column)
        op = Operation(type=head.group(3),
                       outputs=[Var(head.group(1), self._simple_type(head.group(2), (line, column + head.start(2))), loc=loc)],
                       loc=loc)
        inputs, attributes = op.inputs, op.attributes
        base = column  # the token is one line: a part's column is base + its offset
        for m in _SIMPLE_ARG.finditer(text, head.end(), len(text) - 1):
            key, raw = m.groups()
            name = _Name(key)
            name.line, name.column = line, base + m.start()
            kind, key, payload = self.argument([name, self._simple_value(raw, line, base + m.start(2))])
            target = inputs if kind == "input" else attributes
            if key in target:
                self._fail(f"{'input' if kind == 'input' else 'attribute'} {key!r} is given twice", place_of(name))
            target[str(key)] = payload
        return op

    def _simple_value(self, text: str, line: int, column: int):
        """A SIMPLE_ARG's value (at `line`, `column`) as the long way reads it: the same
        callbacks, on tokens made with their place, so that a mistake is reported where it is."""
        first = text[0]
        if first == "%":
            return Ref(text[1:])
        if first == "[":
            return self.numbers([Token("NUMBERS", text, line=line, column=column)])
        if first == '"':
            return text[1:-1]
        if text == "True" or text == "False":
            return text == "True"
        if first == "(":
            if text[1] == "%":  # (%a, %b)
                return Bindings(Ref(name.strip()[1:]) for name in text[1:-1].split(","))
            cut = text.index(")") + 1  # (64, 8, fp16)(blob(64)) or (64, 8, fp16)(blob)
            if text.endswith("(blob)"):
                data = self.implied_blob([None])
            else:
                data = self.blob([None, Token("SIGNED_INT", text[cut + 6:-2], line=line, column=column + cut + 6)])
            return self.simple_typed_value([Token("TENSOR_TYPE", text[:cut], line=line, column=column),
                                            _Data(data, "")])
        if first.isalpha():  # fp16(0.5), fp16([1.0, 2.0])
            cut = text.index("(")
            literal = self._simple_value(text[cut + 1:-1], line, column + cut + 1)
            return self.dtype_value([Token("DTYPE", text[:cut], line=line, column=column), _Data(literal, "")])
        try:
            return lexemes.parse_float(text) if FLOAT_MARK.search(text) else lexemes.parse_int(text)
        except LiteralError as e:
            self._fail(str(e), (line, column))

    def _var_name(self, tok) -> str:
        if self.raw_strings:
            return tok[1:]
        try:
            return lexemes.var_name(tok)
        except ValueError as e:  # the escape's offset is in the quoted part, after the %
            self._fail(str(e), (tok.line, tok.column + 1 + getattr(e, "offset", 0)))

    def var_decl(self, items):
        tok, vtype = items
        return Var(self._var_name(tok), _absent_to_none(vtype), loc=place_of(tok))

    def argument(self, items):
        key, v = items
        if isinstance(key, Token):
            key = self._key(key)
        if isinstance(v, Ref):
            return ("input", key, [str(v)])
        if self.raw_strings and _unknown_in_print(v):
            v = ELIDED
        elif isinstance(v, Bindings):
            return ("input", key, [self._binding(x, key) for x in v])
        value = v if isinstance(v, Value) else self._value(v, place_of(key))
        if key in ("name", "val"):
            return ("attribute", key, value)
        return ("input", key, [value])

    def _binding(self, item, key):
        if isinstance(item, Ref):
            return str(item)
        if isinstance(item, _Item):
            if item.kind == "dim" and item.value is UNSET_DIM:
                return None  # `_`: a Binding with neither name nor value
            self._fail("expected a value or a %name in the list of bindings", place_of(key))
        if isinstance(item, _Symbol):
            self._fail(f"unexpected name {item}: expected a value or a %name", place_of(key))
        return item if isinstance(item, Value) else self._value(item, place_of(key))

    def ref_argument(self, items):
        tok = items[0]
        key, _, var = tok.partition("=")
        name = _Name(key.rstrip())
        name.line, name.column = tok.line, tok.column
        var = var.strip()
        return ("input", name, [var[1:] if self.raw_strings else lexemes.var_name(var)])

    def ref(self, items):
        return Ref(self._var_name(items[0]))

    def bindings(self, items):
        return Bindings(items[0])

    def attribute(self, items):
        key, v = items
        if isinstance(key, Token):
            key = self._key(key)
        return (key, v if isinstance(v, Value) else self._value(v, place_of(key)))

    def _key(self, tok) -> _Name:
        out = _Name(tok[:-1].rstrip())
        out.line, out.column = tok.line, tok.column
        return out

    def name(self, items):
        tok = items[0]
        text = self._text(tok) if tok.type == "STRING" else str(tok)
        out = _Name(text)
        out.line, out.column = tok.line, tok.column
        return out

    # ---- types ----
    def tensor_type(self, items):
        group, suffixes = items[0], items[1:]
        if not group and "kind" in suffixes:  # coremltools 4's print of a type with no dtype name
            return UnknownType()
        return self._with_suffixes(self._group_type(group), suffixes, getattr(group, "pos", None))

    def _with_suffixes(self, t, suffixes, pos):
        attrs = {}
        state = False
        for s in suffixes:
            if isinstance(s, Attrs):
                attrs = dict(s)
            elif s == "state":
                state = True
        if attrs:
            if not isinstance(t, TensorType):
                self._fail("only tensor types carry attributes", pos)
            t = TensorType(t.dtype, t.shape, t.rank, attrs)  # a new one: t may be shared
        return StateType(t) if state else t

    def simple_tensor_type(self, items):
        return self._with_suffixes(self._simple_type(items[0]), items[1:], place_of(items[0]))

    def _simple_type(self, tok, at: tuple | None = None) -> TensorType:
        """A TENSOR_TYPE token's type; `at`, the place of its first character when `tok` is
        part of a longer token."""
        known = self.simple_types.get(tok)
        if known is not None:
            return known
        *dims, dtype = WHITESPACE.sub("", tok[1:-1]).split(",")
        if "-" in tok:
            offset = tok.index("-")
            size = re.match(r"-[0-9]+", tok[offset:]).group()
            where = _offset_pos(tok, offset) if at is None else (at[0], at[1] + offset)
            self._fail(f"a dimension cannot be negative ({size})", where)
        shape = tuple(int(d) if d[0].isdigit() else _DIM_WORDS[d] for d in dims)
        sizes = [d for d in shape if type(d) is int]
        if sizes and max(sizes) > MAX_DIM:
            self._fail(f"a dimension must be below 2^64 ({max(sizes)})", place_of(tok) or at)
        known = TensorType(dtypes.by_name(dtype).name, shape)
        self.simple_types[str(tok)] = known = self.tensor_types.setdefault((known.dtype, shape, None), known)
        return known

    def simple_typed_value(self, items):
        tok, rest = items[0], items[1:]
        t = self._with_suffixes(self._simple_type(tok), rest[:-1], place_of(tok))
        return self._typed(t, rest[-1], place_of(tok))

    def _group_type(self, group: Group):
        items = list(group)
        pos = getattr(group, "pos", None)
        if len(items) == 1 and isinstance(items[0], _Item) and items[0].kind == "dict":
            return DictType(None, None)
        rank = None
        if items and isinstance(items[-1], _Item) and items[-1].kind == "rank":
            rank = items.pop().value
        if items and isinstance(items[-1], _Symbol):
            meant = dtypes.ALIASES.get(str(items[-1]))     # numpy's float32 is MIL's fp32
            self._fail(f"unknown dtype {items[-1]}{f'; did you mean {meant}?' if meant else ''} "
                       f"(dtypes are {', '.join(dtypes.NAMES[1:])})",
                       getattr(items[-1], "pos", None) or pos)
        if not items or not (isinstance(items[-1], _Item) and items[-1].kind == "dtype"):
            self._fail("expected a type such as (2, 4, fp32): the dtype comes last", pos)
        dtype = items.pop().value
        shape = []
        for item in items:
            if type(item) is int:
                if item < 0:
                    self._fail(f"a dimension cannot be negative ({item})", pos)
                if item > MAX_DIM:
                    self._fail(f"a dimension must be below 2^64 ({item})", pos)
                shape.append(item)
            elif isinstance(item, _Symbol):
                shape.append(None)  # coremltools' symbolic dims (is0, 3*is0) are unknown sizes
            elif isinstance(item, _Item) and item.kind == "dim":
                shape.append(item.value)
            elif isinstance(item, _Item) and item.kind == "unknown_rank":
                if len(items) != 1:
                    self._fail("'...' (unknown rank) stands alone before the dtype", pos)
                rank = -1 if rank is None else rank
            else:
                self._fail("expected a dimension: a size, ?, * or _", pos)
        return TensorType(dtype, tuple(shape), rank)

    def kind(self, items):
        return "kind"

    def state_kind(self, items):
        return "state"

    def marker(self, items):
        return "marker"

    def _nested(self, t, parts):
        """A composite type, refused past MAX_TYPE_DEPTH levels (printing recurses on types)."""
        depth = 1 + max((self.type_depth.get(id(p), 0) for p in parts), default=0)
        if depth > MAX_TYPE_DEPTH:
            self._fail(f"types are nested more than {MAX_TYPE_DEPTH} deep")
        self.type_depth[id(t)] = depth
        return t

    def list_type(self, items):
        length, element = items[0]
        return self._nested(ListType(_absent_to_none(element), length), [element])

    def list_args(self, items):
        if len(items) == 2:
            dim = items[0]
            return (dim.value if isinstance(dim, _Item) else dim, items[1])
        return (MISSING, items[0])

    def list_suffix(self, items):
        return "list"

    def tuple_type(self, items):
        return self._nested(TupleType([_absent_to_none(t) for t in items if t is not None]), items)

    def dict_type(self, items):
        return self._nested(DictType(_absent_to_none(items[0]), _absent_to_none(items[1])), items[:2])

    def state_type(self, items):
        return self._nested(StateType(_absent_to_none(items[0])), items[:1])

    def unknown_type(self, items):
        return UnknownType()

    def absent_type(self, items):
        return _ABSENT_TYPE

    # dims and type items
    def unknown_dim(self, items):
        return _Item("dim", None)

    def variadic_dim(self, items):
        return _Item("dim", VARIADIC)

    def unset_dim(self, items):
        return _Item("dim", UNSET_DIM)

    def symbol_dim(self, items):
        return _Item("dim", None)

    def unknown_rank(self, items):
        return _Item("unknown_rank")

    def dtype_item(self, items):
        return _Item("dtype", self._dtype(items[0]))

    def dict_item(self, items):
        return _Item("dict")

    def rank_item(self, items):
        return _Item("rank", self._int(items[0]))

    def sym_expr(self, items):
        return _Symbol("".join(str(i) for i in items))

    def group(self, items):
        g = Group(x for x in items[1:] if x is not None)
        g.pos = place_of(items[0])
        return g

    # ---- values ----
    def _typed(self, vtype, data: _Data, pos=None) -> Value:
        try:
            return typed_value(vtype, data.item, data.doc) if data.item is not None \
                else Value(vtype, None, data.doc)
        except LiteralError as e:
            self._fail(str(e), _element_pos(data.item, e) or getattr(data.item, "pos", None) or pos)

    def dtype_value(self, items):
        tok, data = items
        dtype = self._dtype(tok)
        lit = data.item
        if lit is None or isinstance(lit, (Group, DictLit)) or hasattr(lit, "data"):
            shape = ()
            if isinstance(lit, (Group, DictLit)) or hasattr(lit, "data"):
                self._fail(f"{tok}(...) holds a literal; write the full type for other data, "
                           f"e.g. (2, 3, {tok})(...)", place_of(tok))
        elif isinstance(lit, B64):
            dt = dtypes.by_name(dtype)
            if dt.sub_byte or not dt.bits:
                self._fail(f"{tok}(b64\"...\") needs the full type, e.g. (8, {tok})(b64\"...\")", place_of(tok))
            shape = (len(lit) * 8 // dt.bits,)
        else:
            try:
                from ..literals import _flatten
                shape = _flatten(lit)[1]
            except LiteralError as e:
                self._fail(str(e), getattr(lit, "pos", None) or place_of(tok))
        return self._typed(TensorType(dtype, shape), data, place_of(tok))

    def typed_value(self, items):
        group, rest = items[0], items[1:]
        data = rest[-1]
        t = self.tensor_type([group, *rest[:-1]])
        return self._typed(t, data, getattr(group, "pos", None))

    def list_value(self, items):
        data = items[-1]
        return self._typed(self.list_type([items[0]]), data)

    def tuple_value(self, items):
        data = items[-1]
        return self._typed(self.tuple_type(items[:-1]), data)

    def dict_value(self, items):
        return self._typed(self.dict_type(items[:2]), items[2])

    def state_value(self, items):
        return self._typed(self.state_type(items[:1]), items[1])

    def unknown_value(self, items):
        return self._typed(UnknownType(), items[0])

    def untyped_value(self, items):
        return self._typed(None, items[0])

    def data(self, items):
        item, doc = items
        return _Data(item, self._text(doc) if doc is not None else "")

    def doc_only(self, items):
        return _Data(None, self._text(items[0]))

    def tuple_items(self, items):
        return items[0]

    def blob(self, items):
        file_tok, offset_tok = items
        offset = self._int(offset_tok)
        if offset < 0:
            self._fail("a blob offset cannot be negative", place_of(offset_tok))
        if file_tok is None:
            return prepared(Blob(offset))
        return prepared(Blob(offset, self._text(file_tok)))

    def implied_blob(self, items):
        (file_tok,) = items
        self.implied_blobs = True
        blob = blob_layout.ImpliedBlob(None) if file_tok is None else blob_layout.ImpliedBlob(None, self._text(file_tok))
        blob.pos = place_of(file_tok) if file_tok is not None else None   # None: its op's place
        return prepared(blob)

    def npy_ref(self, items):
        path, key, dtype = items
        return prepared(WeightRef("npy", self._text(path), None, self._from(key, dtype, "npy"), loc=place_of(path)))

    def safetensors_ref(self, items):
        path, tensor, key, dtype = items
        return prepared(WeightRef("safetensors", self._text(path), self._text(tensor),
                                  self._from(key, dtype, "safetensors"), loc=place_of(path), tensor_loc=place_of(tensor)))

    def _from(self, key, dtype, what: str) -> str | None:
        """`from=DTYPE`: the dtype of the file's tensor, cast to the declared one."""
        if key is None:
            return None
        if key.split("=")[0].strip() != "from":
            self._fail(f"{what}(...) takes the file{', the tensor name' if what == 'safetensors' else ''} "
                       f"and from=DTYPE (the file's dtype, cast to the declared one), not {key.split('=')[0].strip()}=",
                       place_of(key))
        return self._dtype(dtype)

    def storage(self, items):
        tok, payload = items
        try:
            return storage_escape(str(tok), payload)
        except LiteralError as e:
            self._fail(str(e), place_of(tok))

    def nothing(self, items):
        return ABSENT

    def empty_immediate(self, items):
        return EMPTY_IMMEDIATE

    # literals
    def nan_bits(self, items):
        text = items[0]
        bits = lexemes.NanBits(int(text[text.index("(") + 1:-1], 16))
        return bits

    def b64_lit(self, items):
        try:
            out = B64.decode(items[0])
        except LiteralError as e:
            self._fail(str(e), place_of(items[0]))
        return out

    def numbers(self, items):
        tok = items[0]
        try:
            return read_numbers(tok, place_of(tok))
        except LiteralError as e:
            self._fail(str(e), place_of(tok))

    def elided(self, items):
        return ELIDED

    def dict_entry(self, items):
        return (items[0], items[1])

    def absent(self, items):
        return ABSENT

    def np_scalar(self, items):
        tok, lit = items
        if not (str(tok).startswith(("np.", "numpy.")) and type(lit) in (int, float, bool, str)):
            self._fail(f"unknown function {tok}(...) in a value", place_of(tok))
        return lit

    def bare_name(self, items):
        tok = items[0]
        if str(tok) in _NUMPY_BOOLS:
            return _NUMPY_BOOLS[str(tok)]
        symbol = _Symbol(tok)
        symbol.pos = place_of(tok)
        return symbol

    def object_repr(self, items):
        tok = items[0]
        self._fail(f"coremltools printed a Python object here ({tok}), not its value; "
                   "MIL text cannot hold it", place_of(tok))


# The parts of a SIMPLE_OP token (grammar/mil.lark), which has already matched as a whole.
_SIMPLE_HEAD = re.compile(rf"%({lexicon.VAR_CHAR}+):[ \t]*(\([^)]*\))[ \t]*=[ \t]*({lexicon.IDENT})\(")
_NEXT_ARG = rf"(?=,[ \t]*{lexicon.NAME}=|$)"
_SIMPLE_ARG = re.compile(f'({lexicon.NAME})=({lexicon.BARE_VAR}|'
                         r'\[[ \t0-9.eE+\-,\[\]naif]*\]' + _NEXT_ARG + '|' +
                         lexicon.PLAIN_STRING + '|'
                         r'\(%[^)]*\)|'                                     # (%a, %b)
                         r'\([^()]*\)\(blob(?:\([0-9]+\))?\)|'            # (64, 8, fp16)(blob(64))
                         r'[a-z0-9]+\((?:\[[^=]*?\]|[^,()]*)\)' + _NEXT_ARG + '|'  # fp16([1.0, 2.0])
                         r'[^,]+)(?:,[ \t]*|$)')


def _element_pos(lit, error: LiteralError) -> tuple | None:
    """Where the element an error names stands in a number list, when the list says."""
    index = getattr(error, "index", None)
    if index is None or not isinstance(lit, NumLit) or lit.token is None:
        return None
    for i, m in enumerate(NUMBER.finditer(lit.token)):
        if i == index:
            return _offset_pos(lit.token, m.start())
    return None
