"""Object model → canonical MIL text: one short method of MilPrinter per construct.

Canonical means one text per program: ops one per line in program order, map entries in a
fixed order (functions: main first, then by name; op inputs in the op's declared order;
attributes by key), each value in the plainest form that reads back to the same proto bytes.
A printer's state is explicit: the blob layout of the program it prints (offsets that follow
from it are left out), an author's notes (PrintOptions.notes) and the literal policy of the
author's op being printed. The module-level functions print a piece alone, every offset written.
"""
from __future__ import annotations

import base64

from ... import dtypes, ops, packing
from ...bulk import bulk
from ...ir.types import MISSING, UNSET_DIM, VARIADIC, DictType, ListType, StateType, TensorType, TupleType, UnknownType
from ...ir.values import DEFAULT_WEIGHT_FILE, Blob, DictData, Elided, EmptyImmediate, ListData, TensorData, TupleData, Value, WeightRef
from .. import blob_layout, lexemes

INLINE_LIMIT = 64   # tensors up to this many elements are written as decimals, larger as b64
INDENT = "  "
_NO_CONTEXT = object()


def print_program(program, options=None) -> str:
    """The canonical text; with PrintOptions.notes (a miltext.authored.trivia.Trivia), an
    author's text: their comments and blank lines placed by the notes, their literals laid out
    by them."""
    return MilPrinter(options).program(program)

def unknown_fields_value(table: dict) -> Value:
    """Program.unknown_fields as the value the header writes: path -> its bytes."""
    key, raw = TensorType("string"), TensorType("uint8", (None,))
    return Value(DictType(key, raw), DictData([
        (Value.tensor(path), Value(raw, TensorData("bytes", bytes(table[path])))) for path in sorted(table)]))


def dim_text(d) -> str:
    if type(d) is int:
        return str(d)
    if d is None:
        return "?"
    if d is VARIADIC:
        return "*"
    if d is UNSET_DIM:
        return "_"
    raise TypeError(f"not a dimension: {d!r}")


_TENSOR_TYPE_TEXT: dict = {}  # (dtype, shape, rank) -> text: real programs repeat few types


def _is_bare(text: str) -> bool:
    return not text[:1].isalpha() or text in ("True", "False", "nan", "inf")


def weight_ref_text(ref: WeightRef) -> str:
    """`npy("w.npy")`, `safetensors("model.safetensors", "wq", from=fp32)`."""
    args = [lexemes.quote(ref.path)] + ([lexemes.quote(ref.tensor)] if ref.tensor is not None else [])
    if ref.source_dtype is not None:
        args.append(f"from={ref.source_dtype}")
    return f"{ref.format}({', '.join(args)})"


_STORAGE_DTYPE = {"floats": "fp32", "doubles": "fp64", "ints": "int32", "longInts": "int64",
                  "bools": "bool"}


def _b64(raw: bytes) -> str:
    return 'b64"' + base64.b64encode(raw).decode("ascii") + '"'


def _empty_nesting(shape: tuple) -> int:
    """How many `[]` the nested literal of an empty tensor of `shape` holds: the product of the
    sizes before the first zero (the text would be that long whatever the input's size)."""
    total = 1
    for d in shape[:-1]:
        if d == 0:
            break
        total *= d
        if total > INLINE_LIMIT:
            break
    return total


class MilPrinter:
    """Prints one program, or pieces of text alone (with no blob layout, every offset written).
    `literals` is the policy of the author's op being printed (miltext.authored.op_layout.Literals:
    numbers past INLINE_LIMIT too, nested lists the layout may break into rows), else None."""
    __slots__ = ("notes", "layout", "literals")

    def __init__(self, options=None, layout=None):
        self.notes = None if options is None else options.notes
        self.layout = layout
        self.literals = None

    def program(self, program) -> str:
        """One list of lines for the whole program, joined once: a big program's text is built
        twice at most (its lines, then the text), not once more per function and newline."""
        self.layout = blob_layout.Layout()
        with bulk():
            notes = self.notes
            header = self._header(program)
            if header and notes is not None:
                header += notes.header_trailing()
            lines = [header] if header else []
            for name in sorted(program.functions, key=lambda n: (n != "main", n)):
                if lines:
                    lines.append("")  # a blank line between parts
                self.function_lines(name, program.functions[name], lines)
            if lines:
                lines.append("")  # the final newline
            return "\n".join(lines)

    def function_text(self, name: str, fn) -> str:
        lines = []
        self.function_lines(name, fn, lines)
        return "\n".join(lines)

    def authored_op_parts(self, op, literals) -> tuple[str, list, list, str]:
        """op_parts with an author's literal policy (miltext.authored.op_layout.Literals)."""
        self.literals = literals
        try:
            return self.op_parts(op)
        finally:
            self.literals = None

    def type_text(self, t) -> str:
        """type_text, a tensor type's attributes written with this printer's literal policy
        (outside the layout's order: their blobs write their offsets)."""
        if type(t) is TensorType and t.attributes:
            plain = MilPrinter()
            plain.literals = self.literals
            return _tensor_type_text(t, plain)
        return type_text(t)

    def _header(self, program) -> str:
        if program.version == 1 and not program.doc and not program.attributes and not program.unknown_fields:
            return ""
        fields = [f"version={program.version}"]
        if program.doc:
            fields.append(f"doc={lexemes.quote(program.doc)}")
        if program.unknown_fields:
            fields.append(f"unknownFields={self.value_text(unknown_fields_value(program.unknown_fields))}")
        return f"program({', '.join(fields)}){self.attributes_text(program.attributes)}"

    def function_lines(self, name: str, fn, lines: list) -> None:
        notes = self.notes
        head = lexemes.name(name) + (f"[{lexemes.name(fn.opset)}]" if fn.opset else "") + "("
        sep = ",\n" + " " * len(head)
        if notes is None:
            head += sep.join(self.var_decl(v) for v in fn.inputs)
        else:
            head += notes.inputs(fn, [self.var_decl(v) for v in fn.inputs], " " * len(head))
        head += ")" + self.attributes_text(fn.attributes) + " {"
        if notes is not None:
            head = notes.opening(fn, "", lines, head)
        lines.append(head)
        counter = [0]
        keys = sorted(fn.blocks, key=lambda k: (k != fn.opset, k))
        for key in keys:
            self.block_lines(fn.blocks[key], INDENT, None if key == fn.opset else key, counter, lines)
        lines.append("}" if notes is None else notes.closing(fn, "", lines, "}"))

    def block_lines(self, block, indent: str, key, counter: list, lines: list) -> None:
        notes = self.notes
        label = f"block{counter[0]}"
        counter[0] += 1
        spec = f"[{lexemes.name(key)}]" if key is not None else ""
        inputs = ", ".join(self.var_decl(v) for v in block.inputs)
        head = f"{indent}{label}{spec}({inputs}){self.attributes_text(block.attributes)} {{"
        lines.append(head if notes is None else notes.opening(block, indent, lines, head))
        inner = indent + INDENT
        for op in block.operations:
            lines.append(inner + self.op_text(op) if notes is None else notes.op_line(op, inner, lines, self))
            for nested in op.blocks:
                self.block_lines(nested, inner + INDENT, None, counter, lines)
        end = f"{indent}}} -> ({', '.join(lexemes.var(o) for o in block.outputs)})"
        lines.append(end if notes is None else notes.closing(block, indent, lines, end))

    def var_decl(self, v) -> str:
        if v.type is None:
            return lexemes.var(v.name)
        return f"{lexemes.var(v.name)}: {self.type_text(v.type)}"

    def op_text(self, op) -> str:
        head, _, args, tail = self.op_parts(op)
        return f"{head}{', '.join(args)}{tail}"

    def op_parts(self, op) -> tuple[str, list, list, str]:
        """An op's text in parts: up to its `(`, the keys of its arguments and their texts, and
        from its `)` on."""
        outs = ", ".join(self.var_decl(v) for v in op.outputs)
        order = ops.input_order(op.type)
        keys = sorted(op.inputs, key=lambda k: (order.get(k, len(order)), k))
        args = [f"{lexemes.name(k)}={self.bindings_text(k, op.inputs[k])}" for k in keys]
        attrs = op.attributes
        rest = {}
        if attrs:
            for key in sorted(attrs):
                if key not in ("name", "val"):
                    rest[key] = attrs[key]
            for key in ("val", "name"):
                if key in attrs:
                    keys.append(key)
                    args.append(f"{key}={self.value_text(attrs[key])}")
        call = f"{lexemes.name(op.type)}("
        return (f"{outs} = {call}" if outs else call), keys, args, ")" + self.attributes_text(rest)

    def bindings_text(self, key: str, bindings: list) -> str:
        if len(bindings) == 1:
            b = bindings[0]
            if isinstance(b, str):
                return lexemes.var(b)
            if b is None:
                return "(_)"
            text = self.value_text(b)
            return f"({text})" if key in ("name", "val") else text  # bare would read as an attribute
        return "(" + ", ".join(self._binding(b) for b in bindings) + ")"

    def _binding(self, b) -> str:
        if isinstance(b, str):
            return lexemes.var(b)
        if b is None:
            return "_"
        return self.value_text(b)

    def attributes_text(self, attrs: dict) -> str:
        if not attrs:
            return ""
        return "[" + ", ".join(f"{lexemes.name(k)}={self.value_text(attrs[k])}" for k in sorted(attrs)) + "]"

    def value_text(self, v: Value, context=_NO_CONTEXT) -> str:
        """A value where `context` is the type a bare literal would take (a typed container's
        element type), or none (a bare literal takes the default for how it is written)."""
        if context is None or isinstance(context, UnknownType):
            context = _NO_CONTEXT
        t, data = v.type, v.data
        if (type(data) is TensorData and data.field == "strings" and type(t) is TensorType
                and t.dtype == "string" and not t.shape and t.rank is None and not t.attributes
                and len(data.values) == 1 and not v.doc and (context is _NO_CONTEXT or context == t)):
            return lexemes.quote(data.values[0])  # a string scalar, such as every op's name
        if not v.doc:
            # A tuple's data is a parenthesized list, which cannot stand bare inside another one.
            if context is not _NO_CONTEXT and v.type == context and not isinstance(context, TupleType):
                text = self.data_text(v.type, v.data)
                if text is not None:
                    return text
            short = self._short_form(v, bare=context is _NO_CONTEXT)
            if short is not None:
                return short
        return self._full_form(v)

    def _short_form(self, v: Value, bare: bool) -> str | None:
        """`[1.0, 2.0]` (the literal's default type) or `fp16([1.0, 2.0])` (shape from nesting)."""
        t = v.type
        if type(t) is TensorType:
            if t.attributes or t.rank is not None or not isinstance(v.data, TensorData):
                return None
            shape = t.shape
            if not all(type(d) is int for d in shape) or 0 in shape[:-1]:
                return None  # the nesting of a literal could not say this shape
            dt = dtypes.by_name(t.dtype)
            if not dt.kind in ("float", "int", "uint", "bool", "string"):
                return None
            count = t.element_count
            if count > INLINE_LIMIT and dt.kind != "string" and not (self.literals is not None and self.literals.numbers):
                return None
            text = self._tensor_literal(dt, v.data, count, shape) if dt.storage == v.data.field else None
            if text is None:
                return None
            if bare and dtypes.DEFAULT_FOR_KIND.get(dt.kind) == dt.name and (count or dt.name == "fp32"):
                return text
            return f"{dt.name}({text})"
        if bare and isinstance(t, DictType) and isinstance(v.data, DictData) and v.data.items:
            return self._bare_dict(t, v.data)
        if bare and t is None and isinstance(v.data, Elided):
            return "[...]"
        return None

    def _bare_dict(self, t: DictType, data: DictData) -> str | None:
        """`{"k": "v"}`: only when reading it back infers exactly this dict type."""
        for side in (t.key, t.value):
            if not (type(side) is TensorType and not side.shape and side.rank is None
                    and not side.attributes and dtypes.DEFAULT_FOR_KIND.get(dtypes.by_name(side.dtype).kind) == side.dtype):
                return None
        parts = []
        for key, val in data.items:
            if key is None or val is None or key.doc or val.doc or key.type != t.key or val.type != t.value:
                return None
            # Read back with no context, each side must come out of its own literal as this type.
            k, v = self._short_form(key, bare=True), self._short_form(val, bare=True)
            if k is None or v is None or not _is_bare(k) or not _is_bare(v):
                return None
            parts.append(f"{k}: {v}")
        return "{" + ", ".join(parts) + "}"

    def _full_form(self, v: Value) -> str:
        """`TYPE(data[, doc="..."])`, which says everything."""
        data = "" if v.data is None else (self.data_text(v.type, v.data) or self._escaped_data(v.data))
        if v.doc:
            data = f"{data}, doc={lexemes.quote(v.doc)}" if data else f"doc={lexemes.quote(v.doc)}"
        return f"{self.type_text(v.type)}({data})"

    def data_text(self, t, data) -> str | None:
        """The data of a value written as its type reads it back, or None when it cannot be."""
        if isinstance(data, Blob):
            layout = self.layout
            if layout is not None and layout.implied(data, t):
                return "blob" if data.file == DEFAULT_WEIGHT_FILE else f"blob({lexemes.quote(data.file)})"
            if data.file == DEFAULT_WEIGHT_FILE:
                return f"blob({data.offset})"
            return f"blob({lexemes.quote(data.file)}, {data.offset})"
        if isinstance(data, WeightRef):
            return weight_ref_text(data)
        if isinstance(data, Elided):
            return "[...]"
        if isinstance(t, StateType) and isinstance(t.wrapped, TensorType):
            t = t.wrapped
        if type(t) is TensorType and isinstance(data, TensorData):
            dt = dtypes.by_name(t.dtype)
            if dt.storage != data.field or not dt.storage:
                return None
            count = t.element_count
            shape = t.shape if count is not None else None
            return self._tensor_literal(dt, data, count, shape, allow_b64=True)
        if isinstance(t, ListType) and isinstance(data, ListData):
            return "[" + ", ".join(self.value_text(x, t.element) for x in data.values) + "]"
        if isinstance(t, TupleType) and isinstance(data, TupleData):
            n = len(t.types)
            return "(" + ", ".join(self.value_text(x, t.types[i] if i < n else None)
                                   for i, x in enumerate(data.values)) + ")"
        if isinstance(t, DictType) and isinstance(data, DictData):
            return "{" + ", ".join(f"{self._side(k, t.key)}: {self._side(v, t.value)}" for k, v in data.items) + "}"
        return None

    def _side(self, v, context) -> str:
        return "_" if v is None else self.value_text(v, context)

    def _escaped_data(self, data) -> str:
        """Data whose place its type cannot tell: written as the proto stores it."""
        if isinstance(data, TensorData):
            if data.field is None:
                return "tensor: _"
            return f"{data.field}: {self._storage_payload(data)}"
        if isinstance(data, TupleData):
            return "tuple: (" + ", ".join(self.value_text(x) for x in data.values) + ")"
        if isinstance(data, ListData):
            return "list: [" + ", ".join(self.value_text(x) for x in data.values) + "]"
        if isinstance(data, DictData):
            return "dict: {" + ", ".join(f"{self._side(k, None)}: {self._side(v, None)}" for k, v in data.items) + "}"
        if isinstance(data, EmptyImmediate):
            return "immediate: _"
        raise TypeError(f"not MIL value data: {data!r}")

    def _storage_payload(self, data: TensorData) -> str:
        if data.field == "bytes":
            return _b64(data.values)
        if data.field == "strings":
            return "[" + ", ".join(lexemes.quote(s) for s in data.values) + "]"
        if len(data.values) > INLINE_LIMIT:
            return _b64(data.values.astype(data.values.dtype.newbyteorder("<")).tobytes())
        return self._tensor_literal(dtypes.by_name(_STORAGE_DTYPE[data.field]), data, None, None, allow_b64=True)

    def _tensor_literal(self, dt, data: TensorData, count, shape, allow_b64: bool = False) -> str | None:
        """The tensor's elements as a nested list (or a scalar), past INLINE_LIMIT as b64 when
        `allow_b64`; None when the stored elements do not decode as `dt` or do not fit `shape`."""
        elements = lexemes.stored_elements(dt, data, count)
        if elements is None:
            return None
        n = len(elements)
        if n > INLINE_LIMIT and dt.kind != "string" and not (self.literals is not None and self.literals.numbers):
            if not allow_b64 or (count is not None and n != count):
                return None
            return _b64(data.values if data.field == "bytes" else packing.pack(dt, data.values))
        scalars = lexemes.element_texts(dt, elements)
        if shape is not None and count == n:
            if not shape:
                return scalars[0]
            if not n and _empty_nesting(shape) > INLINE_LIMIT:
                # (10**9, 0) would nest a billion `[]`s: a typed context reads a flat `[]` as well
                return "[]" if allow_b64 else None
            literals = self.literals
            return lexemes.nested(scalars, shape) if literals is None else literals.literal(scalars, shape)
        return "[" + ", ".join(scalars) + "]" if allow_b64 else None


_PLAIN = MilPrinter()   # no layout, no notes, no author's literals: nothing it changes
function_text = _PLAIN.function_text
var_decl = _PLAIN.var_decl
op_text = _PLAIN.op_text
op_parts = _PLAIN.op_parts
bindings_text = _PLAIN.bindings_text
attributes_text = _PLAIN.attributes_text
value_text = _PLAIN.value_text
data_text = _PLAIN.data_text


def type_text(t) -> str:
    if type(t) is TensorType:
        if t.attributes:
            return _tensor_type_text(t, _PLAIN)
        key = (t.dtype, t.shape, t.rank)
        text = _TENSOR_TYPE_TEXT.get(key)
        if text is None:
            text = _tensor_type_text(t, _PLAIN)
            if len(_TENSOR_TYPE_TEXT) < 4096:
                _TENSOR_TYPE_TEXT[key] = text
        return text
    if t is None:
        return "_"
    if isinstance(t, ListType):
        length = "" if t.length is MISSING else dim_text(t.length) + ", "
        return f"List[{length}{type_text(t.element)}]"
    if isinstance(t, TupleType):
        return "Tuple[" + ", ".join(type_text(x) for x in t.types) + "]"
    if isinstance(t, DictType):
        return f"Dict[{type_text(t.key)}, {type_text(t.value)}]"
    if isinstance(t, StateType):
        if isinstance(t.wrapped, TensorType):
            return type_text(t.wrapped) + "(State)"
        return f"State[{type_text(t.wrapped)}]"
    if isinstance(t, UnknownType):
        return "unknown"
    raise TypeError(f"not a MIL type: {t!r}")


def _tensor_type_text(t: TensorType, printer: MilPrinter) -> str:
    """`printer` writes the attributes' values; it has no layout (a type's values are outside
    the layout's order)."""
    if t.rank is None:
        items = [dim_text(d) for d in t.shape]
        items.append(t.dtype)
    elif t.rank == -1 and not t.shape:
        items = ["...", t.dtype]
    else:
        items = [dim_text(d) for d in t.shape] + [t.dtype, f"rank={t.rank}"]
    if not t.attributes:
        return "(" + ", ".join(items) + ")"
    return "(" + ", ".join(items) + ")" + printer.attributes_text(t.attributes)
