"""What an inference rule sees of an op: the types and (when known) values of its inputs,
with the op table's defaults for optional inputs the op is not given."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes, ops as op_table
from ..ir import TensorType, Value
from .errors import InferenceError, Unsupported
from .symbols import Sym, fully_known, known


class TypeScope:
    """Types and known values of the vars in reach, by name; a nested block sees its parent's.
    (What inference knows of names; which definition a name refers to is ir.scopes.Scope's.)"""

    def __init__(self, parent: TypeScope | None = None):
        self.parent = parent
        self.types: dict = {}
        self.values: dict = {}      # name -> numpy array (or a const's Value, read when asked)
        self.consts: set = set()    # names of const ops' outputs (their values may be in a file)

    def _scope_of(self, name: str, table: str):
        """The innermost scope whose `table` knows `name` (blocks see their enclosing ones)."""
        s = self
        while s is not None and name not in getattr(s, table):
            s = s.parent
        return s

    def owner(self, name: str):
        """The scope that defines `name` for this one (it or an enclosing one), or None."""
        return self._scope_of(name, "types")

    def type(self, name: str):
        s = self._scope_of(name, "types")
        return None if s is None else s.types[name]

    def is_const(self, name: str) -> bool:
        return self._scope_of(name, "consts") is not None

    def value(self, name: str):
        s = self._scope_of(name, "values")
        if s is None:
            return None
        found = s.values[name]
        if isinstance(found, Value):
            found = s.values[name] = value_array(found)
        return found


def value_array(value: Value):
    """A literal's elements as numpy, or None when it is not an immediate tensor."""
    try:
        return value.array
    except (TypeError, ValueError):
        return None


class Operands:
    def __init__(self, op, opset: str, scope: TypeScope):
        self.op, self.opset, self.scope = op, opset, scope
        self.block_outputs: list = []     # the output types of each nested block, in order
        self.output_values = None         # values of the outputs, when inference knows them
        self._params = op_table.params(op.type, opset)

    def kind(self, key: str) -> str | None:
        """The op table's kind of input `key`: "tensor", "tuple", "list", ..."""
        return self._params.get(key, {}).get("kind")

    def has(self, key: str) -> bool:
        return key in self.op.inputs or key in self.op.attributes and key != "name"

    def _bindings(self, key: str) -> list:
        if key in self.op.inputs:
            return self.op.inputs[key]
        if key in self.op.attributes and key != "name":
            return [self.op.attributes[key]]
        return []

    def types(self, key: str) -> list:
        return [self.scope.type(b) if isinstance(b, str) else b.type if b is not None else None
                for b in self._bindings(key)]

    def type(self, key: str):
        """The type of input `key` (its first binding); Unsupported when it is unknown."""
        found = self.types(key)
        if not found or found[0] is None:
            raise Unsupported(f"no type for input {key!r}")
        return found[0]

    def tensor(self, key: str) -> TensorType:
        """Input `key` as a tensor of known rank (its unknown dims Syms); Unsupported otherwise."""
        t = self.type(key)
        if not isinstance(t, TensorType) or t.rank is not None:
            raise Unsupported(f"input {key!r} is not a tensor of known rank")
        return t

    def shape_length(self, key: str) -> int:
        """The length of the shape input `key` (the rank it gives) when its values are not known;
        Unsupported when its length is not known either."""
        t = self.tensor(key)
        if len(t.shape) != 1 or not known(t.shape[0]):
            raise Unsupported("a shape of unknown length")
        return t.shape[0]

    def values(self, key: str) -> list:
        return [self.scope.value(b) if isinstance(b, str) else value_array(b) if b is not None else None
                for b in self._bindings(key)]

    def consts(self, key: str) -> list:
        """Whether each binding of input `key` is a constant (a literal or a const op's output)."""
        return [self.scope.is_const(b) if isinstance(b, str) else b is not None
                for b in self._bindings(key)]

    def value(self, key: str, *, required: bool = True):
        """The value of input `key`, or the table's default when the op is not given it; with
        `required`, Unsupported when it is not known, else None."""
        if self.has(key):
            found = self.values(key)
            if found and found[0] is not None:
                return found[0]
        elif key in self._params and self._params[key].get("default") is not None:
            return np.asarray(self._params[key]["default"])
        if required:
            raise Unsupported(f"the value of input {key!r} is not known")
        return None

    def scalar(self, key: str, *, default=..., of: type | None = None):
        """Input `key` as one Python number, bool or str; with `of` (int, str or bool), one of
        that kind. InferenceError (naming the input) for a value of another form: a list where
        one value is needed, a string where a number is."""
        v = self.value(key, required=default is ...)
        if v is not None and not fully_known(v):
            if default is ...:
                raise Unsupported(f"input {key!r} is only known at run time")
            v = None
        if v is None:
            return default
        v = np.asarray(v)
        if v.size != 1:
            raise misfit(key, f"input {key!r} must be one value, not "
                              f"{'an empty tensor' if v.size == 0 else f'{v.size} values'}")
        found = v.reshape(-1)[0]
        found = found.item() if hasattr(found, "item") else found
        if of is not None:
            found = _as_kind(key, found, of)
        return found

    def dtype(self, key: str, *, default=...) -> str:
        """Input `key` as the name of a MIL dtype ("fp16", "int32", ...)."""
        name = self.scalar(key, default=default, of=str)
        if name not in dtypes.BY_NAME:
            raise misfit(key, f"{name!r} is not a MIL dtype")
        return name

    def ints(self, key: str, *, default=...) -> list | None:
        """Input `key` as a list of ints (axes, strides, ...); Unsupported when some are only
        known at run time."""
        found = self.sizes(key, default=default)
        if found is not None and not all(type(i) is int for i in found):
            raise Unsupported(f"input {key!r} is only known at run time")
        return found

    def sizes(self, key: str, *, default=...) -> list | None:
        """Input `key` as a list of sizes: ints, or Syms for those only known at run time."""
        v = self.value(key, required=default is ...)
        if v is None:
            return None if default is None else list(default)
        values = np.asarray(v).reshape(-1)
        if values.dtype.kind == "f" and not np.all(np.isfinite(values) & (values == np.round(values))):
            raise misfit(key, f"input {key!r} must hold integers, not {_shown(values)}")
        if values.dtype.kind not in "iubfO" or values.dtype.kind == "O" and not all(
                isinstance(i, (Sym, int, np.integer)) for i in values):
            raise misfit(key, f"input {key!r} must hold integers, not {_shown(values)}")
        return [i if isinstance(i, Sym) else int(i) for i in values]

    def known_ints(self, key: str) -> list | None:
        """Input `key` as a list of ints when every one is known (coremltools' `.val`), else None."""
        v = self.value(key, required=False) if self.has(key) else None
        if not fully_known(v):
            return None
        return self.ints(key)


def misfit(key: str, message: str) -> InferenceError:
    """An input of a form its op cannot take, the input named (check puts the caret under it)."""
    e = InferenceError(message)
    e.key = key
    return e


_KINDS = {int: "an integer", str: "a string", bool: "a bool"}


def _as_kind(key: str, found, of: type):
    """`found` (one element of a value) as a Python value of kind `of`: an integral float counts
    as an int (a print's literal may be 2.0); a bool or a string never counts as a number."""
    if isinstance(found, Sym) and of is int:
        return found
    if of is int and isinstance(found, float) and math.isfinite(found) and found == int(found):
        return int(found)
    if type(found) is of or of is int and isinstance(found, int) and not isinstance(found, bool):
        return found
    raise misfit(key, f"input {key!r} must be {_KINDS[of]}, not {_shown(found)}")


def _shown(values) -> str:
    text = repr(values.tolist() if isinstance(values, np.ndarray) else values)
    return text if len(text) <= 40 else text[:37] + "..."
