"""Object model → model.mil text, as Core ML's compiler writes it into a compiled model.

The layout is the compiler's (docs/modelmil.md): `program(1.0)`, the program's attributes on
their own line, functions at 4 spaces, ops at 12, a block's `} -> (...)` at 8; op inputs and
attributes sorted by key; every value typed, floats in C99 hex; no newline at the end.

What the dialect has no way to say (a doc string, a second block specialization, a NaN's
payload, an unset field, a name that is not an identifier...) raises ProgramError saying what
and where; the dialect never silently drops a part of the program.
"""
from __future__ import annotations

from ... import dtypes
from ...bulk import bulk
from ...errors import ProgramError
from ...ir import MISSING, VARIADIC, Blob, DictData, DictType, ListData, ListType, StateType, TensorData, TensorType, TupleData, TupleType, Value
from .. import lexemes
from .words import IOS_OF_OPSET, VERSION_1_0, VERSION_1_3, name_problem, op_type_problem, read_version, text_version

STEP = "    "


class _Cannot(Exception):
    """Something model.mil cannot express; `places` grow as it leaves each enclosing part."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason, self.places, self.loc = reason, [], None

    def within(self, place: str, loc=None) -> "_Cannot":
        self.places.append(place)
        self.loc = self.loc or loc
        return self


def print_modelmil(program, version: str | None = None) -> str:
    """The model.mil text of `program`. `version` is the dialect version, 1.0 or 1.3 (by
    default the one it was read with, else the one the compiler writes for it:
    words.text_version). A program read from model.mil ends as its text did."""
    printer = _Printer(version or read_version(program) or text_version(program))
    try:
        with bulk():
            return printer.program(program) + program.modelmil_ending
    except _Cannot as e:
        raise _error(e) from None


def operation_text(op, version: str = VERSION_1_0) -> str:
    """One op as its line reads (without indentation, and without its nested blocks)."""
    return _guarded(_Printer(version).operation, op)


def value_text(value: Value, version: str = VERSION_1_0) -> str:
    return _guarded(_Printer(version).value, value)


def type_text(vtype, version: str = VERSION_1_0) -> str:
    return _guarded(_Printer(version).type, vtype)


def _guarded(method, obj) -> str:
    try:
        return method(obj)
    except _Cannot as e:
        raise _error(e) from None


def _error(e: _Cannot) -> ProgramError:
    where = ", ".join(reversed(e.places))
    return ProgramError(f"{where + ': ' if where else ''}model.mil cannot express {e.reason}", e.loc)


class _Printer:
    def __init__(self, version: str):
        if version not in (VERSION_1_0, VERSION_1_3):
            raise ValueError(f"model.mil versions are {VERSION_1_0} and {VERSION_1_3}, not {version!r}")
        self.version = version
        self.bare_scalars = version == VERSION_1_3  # int32 rather than tensor<int32, []>
        self.names: set = set()
        self.tensor_types: dict = {}

    # ---- structure ----
    def program(self, program) -> str:
        if program.version != 1:
            raise _Cannot(f"Program.version {program.version}: program({VERSION_1_0}) and "
                          f"program({VERSION_1_3}) both stand for version 1")
        if program.doc:
            raise _Cannot("a program doc string")
        if program.unknown_fields:
            raise _Cannot("fields this schema does not know (unknownFields in miltext's text)")
        lines = [f"program({self.version})"]
        if program.attributes:
            lines.append(self._attributes(program.attributes, "program attribute"))
        lines.append("{")
        for name in sorted(program.functions, key=lambda n: (n != "main", n)):  # as miltext's text
            fn = program.functions[name]
            try:
                self._function(name, fn, lines)
            except _Cannot as e:
                raise e.within(f"function {name!r}", fn.loc) from None
        lines.append("}")
        return "\n".join(lines)

    def _function(self, name: str, fn, lines: list) -> None:
        ios = IOS_OF_OPSET.get(fn.opset)
        if ios is None:
            raise _Cannot(f"opset {fn.opset!r}: it spells {', '.join(IOS_OF_OPSET)} "
                          f"as {', '.join(IOS_OF_OPSET.values())}")
        if not fn.blocks:
            raise _Cannot("a function without a block")
        if list(fn.blocks) != [fn.opset]:
            keys = ", ".join(sorted(fn.blocks))
            raise _Cannot(f"block specializations other than one for the function's opset "
                          f"{fn.opset} (it has: {keys}); a function shows exactly one block")
        block = fn.blocks[fn.opset]
        if block.inputs:
            raise _Cannot("inputs of a function's block (apart from the function's inputs)")
        if block.attributes:
            raise _Cannot("attributes of a function's block")
        params = ", ".join(self._decl(v, "function input") for v in fn.inputs)
        attrs = " " + self._attributes(fn.attributes, "function attribute") if fn.attributes else ""
        lines.append(f"{STEP}func {self._name(name)}<{ios}>({params}){attrs} {{")
        self._body(block, STEP, lines)

    def _body(self, block, indent: str, lines: list) -> None:
        """A block's ops and its `} -> (...)`: the body at the opening line's indent + 8, the
        closing line at + 4, as the compiler lays out a function."""
        inner = indent + STEP + STEP
        for op in block.operations:
            try:
                lines.append(inner + self.operation(op))
                for nested in op.blocks:
                    self._nested(nested, inner + STEP, lines)
            except _Cannot as e:
                raise e.within(f"op {op.name!r} ({op.type})" if op.name else f"op {op.type}", op.loc) from None
        outputs = ", ".join(self._name(o) for o in block.outputs)
        lines.append(f"{indent}{STEP}}} -> ({outputs});")

    def _nested(self, block, indent: str, lines: list) -> None:
        if block.attributes:
            raise _Cannot("attributes of a nested block")
        params = ", ".join(self._decl(v, "block input") for v in block.inputs)
        lines.append(f"{indent}block({params}) {{")
        self._body(block, indent, lines)

    def operation(self, op) -> str:
        outs = ", ".join(self._decl(v, "output") for v in op.outputs)
        args = ", ".join(f"{self._name(k)} = {self._bindings(k, op.inputs[k])}" for k in sorted(op.inputs))
        attrs = self._attributes(op.attributes, "attribute") if op.attributes else ""
        problem = op_type_problem(op.type, bool(op.outputs))
        if problem:
            raise _Cannot(problem)
        call = f"{op.type}({args}){attrs};"
        return f"{outs} = {call}" if outs else call

    def _bindings(self, key: str, bindings: list) -> str:
        if not bindings:
            raise _Cannot(f"input {key!r} with no bindings")
        try:
            if len(bindings) == 1:
                return self._binding(bindings[0])
            return "(" + ", ".join(self._binding(b) for b in bindings) + ")"
        except _Cannot as e:
            raise e.within(f"input {key!r}") from None

    def _binding(self, b) -> str:
        if type(b) is str:
            return self._name(b)
        if b is None:
            raise _Cannot("a binding with neither a name nor a value")
        return self.value(b)

    def _attributes(self, attrs: dict, what: str) -> str:
        parts = []
        for key in sorted(attrs):
            try:
                parts.append(f"{self._name(key)} = {self.value(attrs[key])}")
            except _Cannot as e:
                raise e.within(f"{what} {key!r}") from None
        return "[" + ", ".join(parts) + "]"

    def _decl(self, v, what: str) -> str:
        if v.type is None:
            raise _Cannot(f"{what} {v.name!r} without a type")
        return f"{self.type(v.type)} {self._name(v.name)}"

    def _name(self, text: str) -> str:
        if text not in self.names:
            problem = name_problem(text)
            if problem:
                raise _Cannot(problem)
            self.names.add(text)
        return text

    # ---- types ----
    def type(self, t) -> str:
        kind = type(t)
        if kind is TensorType:
            return self._tensor_type(t)
        if t is None:
            raise _Cannot("a type left unset")
        if kind is ListType:
            if t.length is MISSING:
                raise _Cannot("a list type without a length")
            return f"list<{self.type(t.element)}, {self._dim(t.length)}>"
        if kind is TupleType:
            return "tuple<" + ", ".join(self.type(x) for x in t.types) + ">"
        if kind is DictType:
            return f"dict<{self.type(t.key)}, {self.type(t.value)}>"
        if kind is StateType:
            return f"state<{self.type(t.wrapped)}>"
        raise _Cannot("the unknown type (a ValueType with no case set)")

    def _tensor_type(self, t: TensorType) -> str:
        key = (t.dtype, t.shape)
        text = self.tensor_types.get(key)
        if text is None or t.rank is not None or t.attributes:
            if t.rank == -1 and not t.shape:
                raise _Cannot("a tensor type of unknown rank")
            if t.rank is not None:
                raise _Cannot(f"a tensor type whose rank ({t.rank}) is not its number of dims ({len(t.shape)})")
            if t.attributes:
                raise _Cannot("tensor type attributes")
            if t.dtype not in dtypes.BY_NAME or t.dtype == "unused":
                raise _Cannot(f"the dtype {t.dtype}")
            if not t.shape and self.bare_scalars:
                text = t.dtype
            else:
                text = f"tensor<{t.dtype}, [{', '.join(self._dim(d) for d in t.shape)}]>"
            self.tensor_types[key] = text
        return text

    @staticmethod
    def _dim(d) -> str:
        if type(d) is int:
            return str(d)
        if d is None:
            return "?"
        raise _Cannot("a variadic dimension" if d is VARIADIC else "a dimension left unset")

    # ---- values ----
    def value(self, v: Value) -> str:
        if v.type is None:
            raise _Cannot("a value without a type")
        if v.doc:
            raise _Cannot("a value's doc string")
        if type(v.data) is Blob:
            path = self.value(Value.tensor(v.data.file))
            offset = self.value(Value.tensor(v.data.offset, "uint64"))
            return f"{self.type(v.type)}(BLOBFILE(path = {path}, offset = {offset}))"
        return f"{self.type(v.type)}({self._literal(v.type, v.data)})"

    def _literal(self, t, data) -> str:
        """The untyped literal of `data` under type `t`."""
        if type(t) is StateType and type(t.wrapped) is TensorType:
            t = t.wrapped
        kind = type(data)
        if type(t) is TensorType and kind is TensorData:
            return self._tensor_literal(t, data)
        if type(t) is ListType and kind is ListData:
            return "[" + ", ".join(self._element(x, t.element) for x in data.values) + "]"
        if type(t) is TupleType and kind is TupleData:
            if len(data.values) != len(t.types):
                raise _Cannot(f"a tuple of {len(data.values)} values under a tuple type of {len(t.types)}")
            return "(" + ", ".join(self._element(x, xt) for x, xt in zip(data.values, t.types)) + ")"
        if type(t) is DictType and kind is DictData:
            return "{" + ", ".join("{" + self._element(k, t.key) + ", " + self._element(v, t.value) + "}"
                                   for k, v in data.items) + "}"
        if data is None:
            raise _Cannot("a value without data")
        raise _Cannot(f"{type(data).__name__} under the type {self.type(t)}")

    def _element(self, v, t) -> str:
        """An element of a list, tuple or dict: its literal, typed by the container."""
        if v is None:
            raise _Cannot("an element left unset")
        if v.doc:
            raise _Cannot("a doc string on an element")
        if v.type != t:
            shown = "no type" if v.type is None else self.type(v.type)
            raise _Cannot(f"an element of type {shown} in a container of {self.type(t)} "
                          "(elements are written without their type)")
        if type(v.data) is Blob:
            raise _Cannot("a blob value inside a list, tuple or dict")
        return self._literal(t, v.data)

    def _tensor_literal(self, t: TensorType, data: TensorData) -> str:
        dt = dtypes.BY_NAME[t.dtype]
        if data.field != dt.storage:
            raise _Cannot(f"{dt.name} elements stored in {data.field or 'no field'}: the dialect writes "
                          f"values, and reading them stores {dt.name} in {dt.storage}")
        count = t.element_count
        elements = lexemes.stored_elements(dt, data, count)
        if elements is None or (count is not None and len(elements) != count):
            raise _Cannot(f"stored elements that are not the {count if count is not None else 'whole'} "
                          f"{dt.name} elements of the type {self.type(t)}")
        shape = t.shape if count is not None else _solved(t.shape, len(elements))
        if shape is None:
            raise _Cannot(f"{len(elements)} elements under {self.type(t)}: the nesting of a literal "
                          "cannot say how the unknown dims split them")
        try:
            scalars = lexemes.element_texts(dt, elements, model_mil=True)
        except ValueError as e:  # a NaN hex cannot spell
            raise _Cannot(str(e)) from None
        return lexemes.nested(scalars, shape) if shape else scalars[0]


def _solved(shape: tuple, n: int) -> tuple | None:
    """`shape` with its unknown dims filled in so that it holds `n` elements, when one way
    does: one unknown dim, or no elements at all."""
    unknown = [i for i, d in enumerate(shape) if d is None]
    known = 1
    for d in shape:
        if d is not None:
            known *= d
    if n == 0:
        return tuple(0 if d is None else d for d in shape)
    if len(unknown) != 1 or not known or n % known:
        return None
    return tuple(n // known if d is None else d for d in shape)
