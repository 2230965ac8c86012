"""`miltext fmt`, the language server's formatting and the pre-commit hook: an author's MIL text
with spacing, indentation and quoting normalized, and everything else of theirs kept: comments,
blank lines between groups of ops, shorthand, literals written as numbers (docs/syntax.md §10).

Safe the way black is: the result must read back to the same program (the same proto bytes and
model section), hold the same comments, and format to itself; otherwise UnsafeFormat, and the
caller leaves the file as it is."""
from __future__ import annotations

from ..errors import ProgramError
from .scan import Scan
from .trivia import Trivia

_BUG = " (a bug in miltext's formatter: please report it)"


class UnsafeFormat(ValueError):
    """Formatting would change the program, lose a comment or not settle; nothing is written."""


def format_source(text: str, filename: str | None = None, *, keep_comments: bool = True) -> str:
    """The formatted text (ParseError when `text` does not parse, UnsafeFormat when the result
    would not be the same program with the same comments). Apple's model.mil dialect stays in
    its dialect, in canonical form: it has no comments."""
    from ..text.dialects import MODELMIL, detect, parse, print_text
    if detect(text) is MODELMIL:
        return print_text(parse(text, filename, dialect=MODELMIL), MODELMIL)
    model, notes = read_source(text, filename, keep_comments)
    if notes is None:
        return text  # canonical text, such as a model's: nothing of an author's to keep
    formatted = source_text(model, notes)
    _check(text, formatted, filename, keep_comments, model, notes)
    return formatted


def read_source(text: str, filename: str | None = None, keep_comments: bool = True):
    """The model of `text` (with its model section, if any) and the Trivia that places the
    text's comments and layout back around it when printed (source_text); no Trivia when the
    text is the model's canonical text, which has nothing more to keep."""
    from ..model.text import model_text, parse_model
    from ..text.dialects import COREMLTOOLS, detect
    model = parse_model(text, filename)
    if "#" not in text and model_text(model) == text:
        return model, None
    return model, Trivia(model.program, text, detect(text) is COREMLTOOLS, keep_comments, model.section)


def source_text(model, notes: Trivia) -> str:
    """The model as text, with the comments and layout `notes` recorded of its source."""
    from ..model.section import section_lines
    from ..text.dialects import PrintOptions, print_text
    head = notes.head_lines()
    section = None if model.spec is None else notes.section.section_text(section_lines(model.spec))
    printed = print_text(model.program, options=PrintOptions(notes=notes))   # first: it takes the header's trailing comment
    program = "".join(line + "\n" for line in notes.section.program_lines()) + printed
    body = program if section is None else section + ("\n" + program if program else "")
    tail = notes.tail_lines()
    if tail and not body:
        tail = tail[1:] if tail[0] == "" else tail
    return "".join(line + "\n" for line in head) + body + "".join(line + "\n" for line in tail)


def comment_texts(text: str, scan: Scan | None = None) -> list[str]:
    """The comments of MIL text (found by `scan`, when there is one), in order."""
    if scan is None:
        from ..text.dialects import COREMLTOOLS, detect
        scan = Scan(text, detect(text) is COREMLTOOLS)
    return [c.text for c in scan.comments]


def _check(text: str, formatted: str, filename, keep_comments: bool, model, before: Trivia) -> None:
    from ..errors import ParseError
    try:
        again, notes = read_source(formatted, filename, keep_comments)
    except ParseError as e:
        raise UnsafeFormat(f"not formatted: the formatted text would not parse (its line {e.line}: "
                           f"{e.errors[0][2]}){_BUG}") from None
    if _fingerprint(again) != _fingerprint(model):
        raise UnsafeFormat(f"not formatted: the formatted text would be a different program{_BUG}")
    kept = comment_texts(formatted, notes.scan if notes is not None else None)
    if keep_comments and sorted(kept) != sorted(comment_texts(text, before.scan)):
        raise UnsafeFormat(f"not formatted: the formatted text would lose or change a comment{_BUG}")
    if notes is not None and source_text(again, notes) != formatted:
        raise UnsafeFormat(f"not formatted: formatting would not settle on one text{_BUG}")


def _fingerprint(model) -> tuple:
    """What must not change: the program's proto bytes (its canonical text where it has no
    proto yet) and the model section."""
    from ..model.section import section_text
    from ..text.dialects import print_text
    try:
        program = model.program.to_bytes()
    except ProgramError:
        program = print_text(model.program)
    return program, (section_text(model.spec) if model.spec is not None else None)
