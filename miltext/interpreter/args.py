"""What a kernel sees of its op: inputs by name as numpy (a var's value, a literal, or the op
definition's default), the dtypes its outputs declare, and its nested blocks to evaluate."""
from __future__ import annotations

import numpy as np

from .. import dtypes, ops as op_table
from ..ir import Value
from .errors import RunError
from .limits import held

_REQUIRED = object()


class Args:
    def __init__(self, evaluator, op, env: dict, opset: str):
        self.evaluator, self.op, self.env, self.opset = evaluator, op, env, opset

    def _bindings(self, key: str) -> list | None:
        if key in self.op.inputs:
            return self.op.inputs[key]
        if key != "name" and key in self.op.attributes:
            return [self.op.attributes[key]]
        return None

    def _resolve(self, binding):
        if isinstance(binding, str):
            if binding not in self.env:
                raise RunError(f"%{binding} is not defined")
            return self.env[binding]
        if isinstance(binding, Value):
            return self.evaluator.value(binding)
        raise RunError("an input binds nothing")

    def has(self, key: str) -> bool:
        return self._bindings(key) is not None

    def __call__(self, key: str, default=_REQUIRED):
        """Input `key` (its one binding); its default when not given: `default`, else the op
        definition's; RunError for a required input left out."""
        found = self._bindings(key)
        if found is None:
            if default is not _REQUIRED:
                return default
            spec = op_table.params(self.op.type, self.opset).get(key)
            if spec is not None and spec.get("optional"):
                d = spec.get("default")
                return None if d is None else np.asarray(d)
            raise RunError(f"input {key!r} is required")
        if len(found) != 1:
            return [self._resolve(b) for b in found]
        return self._resolve(found[0])

    def many(self, key: str) -> list:
        """A variadic input (concat's values) as a list of arrays."""
        found = self._bindings(key)
        if found is None:
            raise RunError(f"input {key!r} is required")
        out = []
        for b in found:
            v = self._resolve(b)
            out.extend(v if isinstance(v, (list, tuple)) else [v])
        return out

    def scalar(self, key: str, default=_REQUIRED):
        v = self(key, default)
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        a = np.asarray(v)
        if a.size != 1:
            raise RunError(f"input {key!r} must be one value, not {a.shape}")
        item = a.reshape(-1)[0]
        return item.item() if hasattr(item, "item") else item

    def ints(self, key: str, default=_REQUIRED) -> list | None:
        v = self(key, default)
        if v is None:
            return None
        return [int(x) for x in np.asarray(v).reshape(-1)]

    def out_dtype(self, index: int = 0):
        """The numpy dtype output `index` declares (None when the type does not say)."""
        t = self.op.outputs[index].type if index < len(self.op.outputs) else None
        dtype = getattr(getattr(t, "wrapped", t), "dtype", None)
        if dtype is None:
            return None
        try:
            return dtypes.by_name(dtype).numpy
        except KeyError:
            return None

    def allow(self, shape, dtype=np.float64, what: str = "a tensor") -> None:
        """RunError unless a tensor of `shape` and `dtype` (or itemsize) fits in --max-memory with
        the values the run holds: kernels call it before allocating a size the inputs decide."""
        itemsize = dtype if isinstance(dtype, int) else np.dtype(dtype).itemsize
        self.evaluator.limits.allow(shape, itemsize, what, lambda: held(self.env))

    def block(self, index: int, bound: list) -> list:
        """Nested block `index` evaluated with its inputs bound to `bound`; its outputs."""
        inner = self.op.blocks[index]
        scope = _NestedValues(self.env)
        for var, value in zip(inner.inputs, bound):
            scope[var.name] = value
        return self.evaluator.block(inner, scope, self.opset)


class _NestedValues(dict):
    """The values a nested block defines, by name, falling back to the enclosing block's."""

    def __init__(self, outer: dict):
        super().__init__()
        self.outer = outer

    def __missing__(self, key):
        return self.outer[key]

    def __contains__(self, key):
        return dict.__contains__(self, key) or key in self.outer
