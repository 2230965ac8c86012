"""The op families and their one loader. Three registries hold knowledge of ops, one module per
family: the kernels `run` evaluates (interpreter/kernels/), the rules inference types them with
(infer/rules/) and the rules `check` holds their inputs' shapes to (checker/shapes/).

The family names are those of coremltools' op definition modules
(coremltools/converters/mil/mil/ops/defs/iOS15..iOS18/), the vocabulary people who write MIL
already know: an op sits in the family that defines it there, and a family present in two
registries has the same file name in both. A registry needs only the families it covers. The
few names coremltools lacks say what their module holds: `blocks` (space/depth/batch
rearrangements), `lists` (make_list and list_*), `const`, `cast`, `range`, `shape_of`,
`elementwise` (unary and binary kernels together) and, in the checker, `ranks` (ranks ops of
several families need) and `common` (helpers, no rules). docs/ops.md shows where each op is."""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache


@cache
def load(package: str) -> None:
    """Import every family module of `package` (a registry's folder, by dotted name) once, so
    their decorators fill the registry's table; nothing is imported before a registry is asked."""
    folder = importlib.import_module(package)
    for info in pkgutil.iter_modules(folder.__path__):
        importlib.import_module(f"{package}.{info.name}")


def family_of(fn) -> str:
    """The family of a registered function: the name of the module that defines it."""
    return fn.__module__.rsplit(".", 1)[-1]
