"""The Model object: a MIL program and the Model message around it (see miltext.model). Its
own module, below the readers and writers of model files, which all make one."""
from __future__ import annotations

TYPE_CHECKING = False   # typing's own flag, without importing typing (textconv's start-up)
if TYPE_CHECKING:
    from ..ir import Program


class Model:
    """A program and the Model message around it. A model read from a file keeps its program
    serialized until something asks for `program`: printing it needs no object model.
    A model read from text keeps that text and its model section as the parser read it
    (`text`, `section`), so that `check` can place what it finds there."""

    text: str | None = None     # the MIL text it was parsed from
    section = None              # the model section (miltext.text.section_syntax.Section) of that text
    confine_refs = False        # weight references may not lead out of `folder` (--confine-refs)

    def __init__(self, program: Program | None = None, spec=None, folder: str | None = None,
                 source: str | None = None, *, program_proto: bytes | None = None):
        self._program, self._program_proto = program, program_proto
        self.spec = spec       # CoreML.Specification.Model, mlProgram left empty; None: a program alone
        self.folder = folder   # @model_path
        self.source = source   # the file it was read from, for messages

    @property
    def program(self) -> Program:
        if self._program is None and self._program_proto is not None:
            from ..errors import InputError, ProgramError
            from ..ir import Program
            try:
                self._program = Program.from_proto(self._program_proto)
            except ProgramError as e:
                raise InputError(f"{self.source or '<model>'}: {e}") from None
            self._program_proto = None
        return self._program

    @program.setter
    def program(self, program: Program) -> None:
        self._program, self._program_proto = program, None

    def program_text(self) -> str:
        """The program's canonical text; straight from the serialized program when it was
        never decoded (see miltext.proto_to_text)."""
        if self._program is None and self._program_proto is not None:
            from ..text.mil.fastprint import program_text
            text = program_text(self._program_proto)
            if text is not None:
                return text
        from ..text.dialects import print_text
        return print_text(self.program)

    def full_spec(self):
        """The Model message with its program; a description derived (as coremltools derives
        one) when the model has none. Raises ProgramError, DescriptionError."""
        from ..proto import schema
        from .derive import derived_spec
        spec = schema.Model()
        spec.CopyFrom(self.spec if self.spec is not None else derived_spec(self.program))
        spec.mlProgram.CopyFrom(self.program.to_proto(strict=True))
        return spec
