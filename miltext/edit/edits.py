"""What an edit is, how the command line writes one, and which edits cannot go together."""
from __future__ import annotations

from dataclasses import dataclass

from ..text.lexemes import var as spelt
from .scope import EditError

RENAMES = ("rename-input", "rename-output", "rename-var")
# the flags of `miltext edit`, each with the form of its argument
FORMS = {"rename-input": "OLD=NEW", "rename-output": "OLD=NEW", "rename-var": "OLD=NEW", "expose": "VAR",
         "extract": "FROM,...:TO,...", "replace-op": "VAR=OPTYPE", "set-weight": "VAR=FILE.npy",
         "remove-output": "NAME"}


@dataclass(frozen=True)
class Edit:
    """One edit. `name` is the var it is about, as the model names it before any edit (None
    for extract); `arg` the new name, the op type, the .npy path, or extract's (FROM, TO)."""
    kind: str
    name: str | None
    arg: object = None

    @property
    def flag(self) -> str:
        """How the command line writes it."""
        if self.kind == "extract":
            return f"--extract {','.join(self.arg[0])}:{','.join(self.arg[1])}"
        return f"--{self.kind} {self.name}" + (f"={self.arg}" if self.arg is not None else "")


def parse(kind: str, text: str) -> Edit:
    """The edit `--KIND TEXT` says (EditError when TEXT is not of its form)."""
    if kind not in FORMS:
        raise EditError(f"no edit --{kind} (the edits are {', '.join('--' + k for k in FORMS)})")
    form = FORMS[kind]
    text = text.strip()
    if kind == "extract":
        sources, colon, targets = text.partition(":")
        ins, outs = _list(sources), _list(targets)
        if not colon or not outs or not ins:
            raise EditError(f"--extract takes {form}: the vars that become inputs, a colon, the vars "
                            f"that become outputs (not {text!r})")
        return Edit(kind, None, (ins, outs))
    if "=" not in form:
        if not _name(text):
            raise EditError(f"--{kind} takes {form}, a var's name (not {text!r})")
        return Edit(kind, _name(text))
    name, eq, arg = text.partition("=")
    if not eq or not _name(name) or not arg.strip():
        raise EditError(f"--{kind} takes {form} (not {text!r})")
    return Edit(kind, _name(name), arg.strip() if kind == "set-weight" else _name(arg))


def _name(text: str) -> str:
    """A var as the user wrote it, with or without its %."""
    text = text.strip()
    return text[1:] if text.startswith("%") else text


def _list(text: str) -> tuple:
    return tuple(n for n in (_name(part) for part in text.split(",")) if n)


def conflicts(edits: list) -> None:
    """EditError for the first two edits that cannot both be made; checked before any is."""
    for i, a in enumerate(edits):
        for b in edits[i + 1:]:
            why = _conflict(a, b) or _conflict(b, a)
            if why:
                raise EditError(f"{a.flag} and {b.flag} conflict: {why}")


def _conflict(a: Edit, b: Edit) -> str | None:
    if a.kind == "extract":
        if b.kind == "extract":
            return "a model is cut down by one --extract"
        if b.kind in ("expose", "remove-output"):
            return "--extract gives the submodel its outputs (list them after its colon)"
        return None
    if a == b:
        return "the same edit given twice"
    if a.kind in RENAMES and b.kind in RENAMES:
        if a.name == b.name:
            return f"both rename {spelt(a.name)}"
        if a.arg == b.arg:
            return f"both name a var {spelt(a.arg)}"
        if a.arg == b.name:
            return f"edits see the names the model has before any edit, so renaming to {spelt(a.arg)} " \
                   f"a var while renaming the one called so is ambiguous; make two edits in turn"
        return None
    if a.name != b.name:
        return None
    pair = {a.kind, b.kind}
    if pair == {"expose", "remove-output"}:
        return f"one adds output {spelt(a.name)}, the other removes it"
    if a.kind == "remove-output" and b.kind in RENAMES:
        return f"output {spelt(a.name)} is removed, so there is nothing to rename"
    if pair == {"replace-op", "set-weight"}:
        return f"--set-weight gives a const's value, --replace-op makes {spelt(a.name)} another op"
    if a.kind == b.kind:
        return f"both edit {spelt(a.name)}"
    return None
