"""The op families and their one loader. Three registries hold knowledge of ops, one module per
family: the kernels `run` evaluates (interpreter/kernels/), the rules inference types them with
(infer/rules/) and the rules `check` holds their inputs' shapes to (checker/shapes/).

The family names are those of coremltools' op definition modules
(coremltools/converters/mil/mil/ops/defs/iOS15..iOS18/), the vocabulary people who write MIL
already know: an op sits in the family that defines it there, and a family present in two
registries has the same file name in both. A registry needs only the families it covers.
docs/ops.md shows, per op, the family module of each registry."""
from __future__ import annotations

import importlib
import pkgutil
from functools import cache

# coremltools' op definition modules, iOS15 to iOS18.
FAMILIES = ("activation", "classify", "control_flow", "conv", "elementwise_binary",
            "elementwise_unary", "image_resizing", "linear", "normalization", "pool", "random",
            "recurrent", "reduction", "scatter_gather", "tensor_operation", "tensor_transformation",
            "constexpr_ops", "quantization_ops", "compression", "states", "transformers")

# The modules of the registries coremltools has no name for, and what they hold.
OTHER_MODULES = {
    "lists": "make_list and the list_* ops (coremltools: control_flow)",
    "const": "const (coremltools: control_flow)",
    "elementwise": "the unary and binary elementwise kernels together",
    "ranks": "the ranks ops of several families need (checker)",
    "common": "helpers of the checker's shape rules, no rules",
    "winograd": "conv's path for 3x3 kernels of stride 1 (Winograd's F(2x2, 3x3)), no ops",
    "conv_bands": "conv's direct path in C (bands of output rows taken from a counter), no ops",
}


@cache
def load(package: str) -> bool:
    """Import every family module of `package` (a registry's folder, by dotted name) once, so
    their decorators fill the registry's table; nothing is imported before a registry is asked.
    True, for the registry's own flag (a global test per lookup is cheaper than a call)."""
    folder = importlib.import_module(package)
    for info in pkgutil.iter_modules(folder.__path__):
        importlib.import_module(f"{package}.{info.name}")
    return True


class OpTable(dict):
    """A registry's table, op type -> what its family modules register: they are imported (by
    `load`) on the first lookup, so building the table costs nothing until it is asked."""

    def __init__(self, package: str):
        super().__init__()
        self.package, self.loaded = package, False

    def find(self, op_type: str, default=None):
        if not self.loaded:
            self.loaded = load(self.package)
        return self.get(op_type, default)

    def full(self) -> OpTable:
        """The table with every family module loaded."""
        self.find("")
        return self

    def register(self, *op_types: str):
        """A decorator that enters the function it decorates under each of `op_types`."""
        def enter(fn):
            for op_type in op_types:
                self[op_type] = fn
            return fn
        return enter


def family_of(fn) -> str:
    """The family of a registered function: the name of the module that defines it."""
    return fn.__module__.rsplit(".", 1)[-1]
