"""ARCHITECTURE.md cannot go stale: every path it names exists, every module it names in
backticks (`text.dialects`, `files.claim_output`, `miltext.loads`) is a module of miltext or a
name defined in one. (Its drawing of the layers is held to the list itself in
tests/test_architecture.py.)"""
import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "ARCHITECTURE.md")
PACKAGE = os.path.join(ROOT, "miltext")

_TICKED = re.compile(r"`([^`\n]+)`")
_PATH = re.compile(r"(?<![\w/.])(?:miltext|tests|docs|scripts|grammar|bench|fuzz|examples|editors)/[\w/.<>-]*")
_LINK = re.compile(r"\]\(([^)#\s]+)\)")
_DOTTED = re.compile(r"[a-z_][a-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
# A dotted name ending so is a file's name (weight.bin, ops.json), not a module.
_FILE_ENDINGS = (".mil", ".json", ".bin", ".py", ".md", ".c", ".proto", ".mlpackage", ".mlmodel",
                 ".aimodel", ".npz", ".npy", ".safetensors")


def _doc() -> str:
    with open(DOC, encoding="utf-8") as f:
        return f.read()


def paths(text: str) -> list:
    """Every path of the repository the text names: in backticks, in prose or as a link."""
    found = set(_PATH.findall(text)) | {t for t in _TICKED.findall(text) if "/" in t and " " not in t}
    found |= {link for link in _LINK.findall(text) if "://" not in link}
    return sorted(p.rstrip(".") for p in found)


def _exists(path: str) -> bool:
    """A path exists; one with a placeholder (`<family>`) needs the folder before it."""
    if "<" in path:
        path = path[:path.index("<")]
    return os.path.exists(os.path.join(ROOT, path))


def module_names(text: str) -> list:
    """Every backticked dotted name whose first part is miltext or one of its modules."""
    top = {name[:-3] if name.endswith(".py") else name for name in os.listdir(PACKAGE)} | {"miltext"}
    return sorted({t for t in _TICKED.findall(text) if _DOTTED.fullmatch(t) and t.split(".")[0] in top
                   and not t.endswith(_FILE_ENDINGS)})


def _module_file(parts: list) -> str | None:
    folder = os.path.join(PACKAGE, *parts)
    for path in (folder + ".py", os.path.join(folder, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def _defined(path: str) -> set:
    """The names a module defines or imports at its top level, and every function and class
    name in it (a method, for `Program.from_proto`)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def resolves(name: str) -> bool:
    """`name` is a module of miltext, or a module and names defined in it."""
    parts = name.split(".")
    parts = parts[1:] if parts[0] == "miltext" else parts
    for cut in range(len(parts), -1, -1):
        path = _module_file(parts[:cut])
        if path is not None:
            rest = parts[cut:]
            return not rest or set(rest) <= _defined(path)
    return False


def test_every_path_named_exists():
    named = paths(_doc())
    assert len(named) > 40
    assert [p for p in named if not _exists(p)] == []


def test_every_module_named_exists():
    named = module_names(_doc())
    assert {"text.dialects", "files.claim_output", "miltext.loads", "model.io"} <= set(named)
    assert [n for n in named if not resolves(n)] == []


def test_the_checks_catch_a_stale_name():
    """The finder itself: a moved module, a renamed function and a missing file are caught."""
    text = ("`text.dialect` `files.claim_outputs` `miltext/text/nothing.py` [x](docs/none.md) "
            "`miltext/infer/rules/<family>.py` `model.mil` `miltext.dumps`")
    assert [p for p in paths(text) if not _exists(p)] == ["docs/none.md", "miltext/text/nothing.py"]
    assert [n for n in module_names(text) if not resolves(n)] == ["files.claim_outputs", "text.dialect"]

