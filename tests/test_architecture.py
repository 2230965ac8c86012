"""No import circles: between miltext's packages (miltext.ir, miltext.proto, miltext.model,
miltext.text, ...) none at all, and between modules only the few listed below, each for a
reason. Any import counts, one inside a function included (a lazy import is still a
dependency); an import under `if TYPE_CHECKING:` does not (it never runs)."""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Module circles that stay, and why.
ALLOWED_MODULE_CYCLES = [
    # Program.from_proto/to_proto/to_bytes are the object model's public methods, and the
    # conversion they call makes (or reads) Programs.
    {"miltext.ir.program", "miltext.ir.decode", "miltext.ir.encode", "miltext.ir.fastencode"},
    # blobs.replace_const (public, documented) reads the model it changes.
    {"miltext.model.blobs", "miltext.model.io", "miltext.model.package", "miltext.model.text"},
]


def modules(folder: str, package: str) -> dict:
    """Dotted module name → file, for every .py under `folder` (the package `package`)."""
    found = {}
    for dirpath, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                parts = [package, *os.path.relpath(path, folder)[:-3].split(os.sep)]
                found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _is_type_checking(node) -> bool:
    test = node.test
    return isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING"
                                         or getattr(test, "attr", None) == "TYPE_CHECKING")


def _imports(tree):
    """Every import statement of a module, wherever it is, except under `if TYPE_CHECKING:`."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def import_graph(found: dict) -> dict:
    """Module → the modules of `found` it imports."""
    graph = {}
    for module, path in found.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        targets = set()
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            submodules = {f"{base}.{alias.name}" for alias in node.names} & found.keys()
            targets |= submodules
            if len(submodules) < len(node.names):    # a name defined in `base` itself
                targets.add(base)
        graph[module] = {t for t in targets if t in found and t != module}
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected parts of `graph` with more than one node (Tarjan, iterative)."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start), on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt), on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    part = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        part.add(member)
                        if member == node:
                            break
                    if len(part) > 1:
                        out.append(part)
    return out


def package_graph(graph: dict) -> dict:
    """The graph between miltext's packages (and top-level modules): miltext.X."""
    def package(module):
        return ".".join(module.split(".")[:2])
    out = {}
    for module, targets in graph.items():
        out.setdefault(package(module), set()).update(package(t) for t in targets if package(t) != package(module))
    return out


@pytest.fixture(scope="module")
def graph() -> dict:
    return import_graph(modules(os.path.join(ROOT, "miltext"), "miltext"))


def test_no_import_circle_between_packages(graph):
    assert [sorted(part) for part in cycles(package_graph(graph))] == []


def test_no_import_circle_between_modules_but_the_known_ones(graph):
    found = [sorted(part) for part in cycles(graph)]
    assert [part for part in found if not any(set(part) <= allowed for allowed in ALLOWED_MODULE_CYCLES)] == []


def test_the_finder_sees_lazy_relative_and_package_level_circles(tmp_path):
    """The finder itself: a circle through a lazy import and a relative one is found, at both
    levels; one through TYPE_CHECKING is not."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    files = {"__init__.py": "", "a/__init__.py": "", "b/__init__.py": "",
             "a/x.py": "from ..b import y\n",
             "b/y.py": "def f():\n    from ..a.x import g\n",
             "b/z.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import w\n",
             "b/w.py": "from . import z\n"}
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    g = import_graph(modules(str(tmp_path), "pkg"))
    assert cycles(g) == [{"pkg.a.x", "pkg.b.y"}]
    assert cycles(package_graph(g)) == [{"pkg.a", "pkg.b"}]
