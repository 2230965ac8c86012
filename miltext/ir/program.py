"""Programs, functions, blocks and operations: MIL.proto's structure as Python objects.

Each class mirrors one message; map fields are dicts, repeated fields lists. An argument of an
operation is a list of bindings, each a var name (str), a Value, or None (a Binding with neither
case set). `loc` is where the parser found the object (line, column), for diagnostics only.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .types import TensorType, ValueType
from .values import TensorData, Value


@dataclass(eq=True, slots=True)
class Var:
    """A NamedValueType: a function/block input or an op output."""
    name: str
    type: ValueType | None = None
    loc: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(eq=True, slots=True)
class Operation:
    type: str
    inputs: dict[str, list] = field(default_factory=dict)
    outputs: list[Var] = field(default_factory=list)
    blocks: list["Block"] = field(default_factory=list)
    attributes: dict[str, Value] = field(default_factory=dict)
    loc: tuple | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str | None:
        """The op's name: its `name` attribute when that is a string scalar."""
        v = self.attributes.get("name")
        if v is not None and isinstance(v.data, TensorData) and v.data.field == "strings" \
                and len(v.data.values) == 1 and isinstance(v.type, TensorType) and v.type.dtype == "string":
            return v.data.values[0]
        return None

    @name.setter
    def name(self, name: str) -> None:
        self.attributes["name"] = Value.tensor(name)


@dataclass(eq=True, slots=True)
class Block:
    inputs: list[Var] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    operations: list[Operation] = field(default_factory=list)
    attributes: dict[str, Value] = field(default_factory=dict)
    loc: tuple | None = field(default=None, compare=False, repr=False)


@dataclass(eq=True, slots=True)
class Function:
    inputs: list[Var] = field(default_factory=list)
    opset: str = ""
    blocks: dict[str, Block] = field(default_factory=dict)   # block_specializations
    attributes: dict[str, Value] = field(default_factory=dict)
    loc: tuple | None = field(default=None, compare=False, repr=False)

    @property
    def block(self) -> Block:
        """The block specialized for the function's own opset."""
        return self.blocks[self.opset]


@dataclass(eq=True, slots=True)
class Program:
    functions: dict[str, Function] = field(default_factory=dict)
    version: int = 1
    doc: str = ""
    attributes: dict[str, Value] = field(default_factory=dict)
    # Fields of any message of the program that this schema does not know (a newer writer's),
    # as protobuf read them: the path of the message (miltext.ir.unknown) -> their wire bytes.
    unknown_fields: dict[str, bytes] = field(default_factory=dict)
    # How a model.mil text said what the proto has no place for, so that it prints back as it
    # was read: its header version ("1.0", "1.3"; None when not read from model.mil) and the
    # whitespace after its last `}` (the compiler writes none).
    modelmil_version: str | None = field(default=None, compare=False)
    modelmil_ending: str = field(default="", compare=False)

    @classmethod
    def from_proto(cls, data) -> "Program":
        """A Program from serialized MIL Program bytes or a Program message (any pool)."""
        from ..errors import ProgramError
        from .decode import program_from_proto
        try:
            return program_from_proto(data)
        except RecursionError:
            raise ProgramError("the program is nested too deeply to read") from None

    def to_proto(self, *, strict: bool = False):
        """This program as a `CoreML.Specification.MILSpec.Program` message (miltext's own pool).

        Raises ProgramError for what no proto can hold (a value left out as `[...]`); with
        `strict`, also for references to names nothing defines."""
        from ..errors import ProgramError
        from .encode import program_to_proto
        try:
            return program_to_proto(self, strict=strict)
        except RecursionError:
            raise ProgramError("the program is nested too deeply to write") from None

    def to_bytes(self, *, strict: bool = False) -> bytes:
        """`self.to_proto(strict=strict).SerializeToString(deterministic=True)`: the same bytes
        and the same errors, written straight from the object model by the native encoder when
        it is built and handles the program (no message is made), else through to_proto."""
        from ..errors import ProgramError
        from .encode import program_bytes
        try:
            return program_bytes(self, strict=strict)
        except RecursionError:
            raise ProgramError("the program is nested too deeply to write") from None
