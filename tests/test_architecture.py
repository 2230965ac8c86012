"""The import graph a newcomer draws (ARCHITECTURE.md): miltext's packages in layers, each
importing only from its own layer and those below it; no import circle between packages, and
between modules only the few listed below, each for a reason. Any import counts, one inside a
function included (a lazy import is still a dependency); an import under `if TYPE_CHECKING:`
does not (it never runs)."""
import ast
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The layers, lowest first: a module imports modules of its own layer or of a lower one, never
# of a higher one. Each entry is a package or a module, named without "miltext." ("" is
# miltext/__init__.py, the Python API); a module belongs to the longest entry it falls under.
# ARCHITECTURE.md shows the same list, highest first (test_the_architecture_doc_draws_these_layers).
LAYERS = [
    # foundations: errors, files, dtypes, the op table; coreai.runtime is the binding to the
    # coreai-core library (it imports only errors): model/ reads an .aimodel through it
    {"errors", "files", "dtypes", "lazy", "bulk", "native", "packing", "progress", "blob_storage",
     "ops", "op_families", "coreai.runtime"},
    {"proto"},                                      # MIL.proto, Model.proto, the C encoder
    {"ir"},                                         # the object model and its protobuf conversion
    {"text"},                                       # MIL text, each dialect, each direction
    {"model"},                                      # files: .mlpackage, .mlmodel, weights, model.mil
    {"infer", "checker", "authored"},               # what a program means, what is wrong, an author's layout
    {"interpreter"},                                # run
    {"edit", "review", "stats", "numerics", "coreai", "interop"},   # the features of the commands
    {""},                                           # the Python API (miltext/__init__.py)
    {"lsp", "pygments_lexer"},                      # the editors' doors
    {"cli"},                                        # the command line
]

# Imports that run up the layers and stay, and why: (importer, imported). None today; keep it short.
UPWARD_IMPORTS: set = set()

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


# Modules that count as packages of their own: the layer entries below a package (coreai.runtime,
# the coreai-core binding, is a foundation though coreai is a feature).
UNITS = tuple(f"miltext.{entry}" for layer in LAYERS for entry in layer if "." in entry)


def package_graph(graph: dict, units: tuple = UNITS) -> dict:
    """The graph between miltext's packages (and top-level modules): miltext.X, or one of `units`."""
    def package(module):
        return next((u for u in units if module == u or module.startswith(u + ".")),
                    ".".join(module.split(".")[:2]))
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


def graph_of_package(tmp_path, files: dict) -> dict:
    """The import graph of a package `pkg` made in tmp_path of `files` (path -> text)."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return import_graph(modules(str(tmp_path), "pkg"))


def test_the_finder_sees_lazy_relative_and_package_level_circles(tmp_path):
    """The finder itself: a circle through a lazy import and a relative one is found, at both
    levels; one through TYPE_CHECKING is not."""
    g = graph_of_package(tmp_path, {"__init__.py": "", "a/__init__.py": "", "b/__init__.py": "",
                                    "a/x.py": "from ..b import y\n",
                                    "b/y.py": "def f():\n    from ..a.x import g\n",
                                    "b/z.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import w\n",
                                    "b/w.py": "from . import z\n"})
    assert cycles(g) == [{"pkg.a.x", "pkg.b.y"}]
    assert cycles(package_graph(g)) == [{"pkg.a", "pkg.b"}]


def layer_of(module: str, package: str = "miltext", layers=LAYERS) -> int:
    """The index in `layers` of the longest entry `module` falls under."""
    name = module[len(package) + 1:] if module != package else ""
    for cut in range(name.count(".") + 1, -1, -1):
        prefix = ".".join(name.split(".")[:cut]) if cut else ""
        for index, layer in enumerate(layers):
            if prefix in layer:
                return index
    raise AssertionError(f"{module} is in no layer: add it to LAYERS and to ARCHITECTURE.md")


def upward_imports(graph: dict, package: str = "miltext", layers=LAYERS) -> list:
    """(importer, imported) for every import of a module from a higher layer."""
    return sorted((m, t) for m, targets in graph.items() for t in targets
                  if layer_of(t, package, layers) > layer_of(m, package, layers))


def test_every_module_is_in_a_layer(graph):
    assert all(isinstance(layer_of(module), int) for module in graph)
    entries = [entry for layer in LAYERS for entry in layer]
    assert len(entries) == len(set(entries))
    named = {f"miltext.{e}".rstrip(".") for e in entries}     # each names a package or a module of it
    assert sorted(n for n in named if not any(m == n or m.startswith(n + ".") for m in graph)) == []


def test_no_import_runs_up_the_layers(graph):
    assert [pair for pair in upward_imports(graph) if pair not in UPWARD_IMPORTS] == []
    assert sorted(UPWARD_IMPORTS - set(upward_imports(graph))) == []    # an exception no longer needed goes


def test_the_layer_finder_sees_a_lazy_import_up(tmp_path):
    """The layer rule itself: a lazy relative import from a low layer up is found, the most
    specific entry decides a module's layer, and an import down is fine."""
    g = graph_of_package(tmp_path, {"__init__.py": "", "low/__init__.py": "", "high/__init__.py": "",
                                    "low/a.py": "def f():\n    from ..high import b\n",
                                    "low/c.py": "from ..high import b\n",
                                    "high/b.py": "from ..low import a\n"})
    layers = [{"", "low"}, {"high"}]
    assert upward_imports(g, "pkg", layers) == [("pkg.low.a", "pkg.high.b"), ("pkg.low.c", "pkg.high.b")]
    layers = [{"", "low"}, {"high", "low.c"}]       # low.c by name, above the rest of low
    assert layer_of("pkg.low.c", "pkg", layers) == 1 and layer_of("pkg.low.a", "pkg", layers) == 0
    assert upward_imports(g, "pkg", layers) == [("pkg.low.a", "pkg.high.b")]
    assert upward_imports(g, "pkg", [{"", "low", "high.b"}, {"high"}]) == []


def test_the_architecture_doc_draws_these_layers():
    """ARCHITECTURE.md's drawing of the layers (highest first) is LAYERS."""
    with open(os.path.join(ROOT, "ARCHITECTURE.md"), encoding="utf-8") as f:
        block = re.search(r"<!-- layers -->\s*```text\n(.*?)^```", f.read(), re.S | re.M).group(1)
    drawn = [{"" if name == "miltext" else name for name in re.split(r"\s{2,}", line.strip())[0].split(", ")}
             for line in block.splitlines()]
    assert drawn[::-1] == LAYERS


# The third-party libraries only a door imports, and the modules that are the door.
DOORS = {
    "pygls": {"miltext.lsp.server", "miltext.lsp.protocol"},
    "lsprotocol": {"miltext.lsp.server", "miltext.lsp.protocol", "miltext.lsp.actions"},
    "coreai": {"miltext.coreai.runtime"},
    "coremltools": {"miltext.interop", "miltext.infer.coremltools_rules"},
}


def third_party_importers(found: dict, library: str) -> set:
    """The modules of `found` that import `library` (or a module of it), lazily or not."""
    out = set()
    for module, path in found.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in _imports(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if not node.level else []
            if any(n == library or n.startswith(library + ".") for n in names):
                out.add(module)
    return out


@pytest.mark.parametrize("library", sorted(DOORS))
def test_only_its_door_imports_a_library(library):
    importers = third_party_importers(modules(os.path.join(ROOT, "miltext"), "miltext"), library)
    assert importers and sorted(importers - DOORS[library]) == []
