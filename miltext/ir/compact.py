"""Operations kept in a third of the memory, for a reader that holds a big program for long and
only reads it (the language server holds the program of every open text).

An ordinary Operation costs two dicts, a list per argument, a list of outputs, an empty list of
blocks and a Value, TensorData and list for its name: about 1.2 kB for a plain op line. A
CompactOperation keeps its arguments as one tuple, its output (the Var) and its name (the
string) as themselves (a const named after its output, as exporters write them: its value
only, the name read from the output), and makes the dicts, lists and the name's Value each time
they are read.
It is an Operation (same fields, equal to the ordinary op it was made from), so everything that
reads programs reads it. The dicts and lists read from it are made afresh each time, so they
are read-only: a change made inside them would be lost, and raises instead (the Values and Vars
in them are the op's own, and changes to those are kept). Assigning a field (`op.inputs = ...`)
turns it back into an ordinary Operation, changed as usual; copies are ordinary too.

The ops one `Compacting` makes (a whole text's, read at once) share one Value for each small
tensor value they hold equal: a real model repeats its axes, permutations, shapes, epsilons and
flags in every layer, each some 300 bytes as a Value, its TensorData and numpy array. A shared
Value is not to be changed in place (the array is read-only): replace it, as a reader that
only reads never needs to.
"""
from __future__ import annotations

from .program import Operation
from .types import NO_ATTRIBUTES, TensorType
from .values import TensorData, Value

_STRING = TensorType("string")
# The slots of Operation, which a CompactOperation fills with its compact forms.
_SLOT = {name: Operation.__dict__[name] for name in ("type", "inputs", "outputs", "blocks", "attributes", "loc")}
_INPUTS, _OUTPUTS, _ATTRIBUTES = _SLOT["inputs"], _SLOT["outputs"], _SLOT["attributes"]


# The largest tensor value shared (bytes of its elements): larger ones are seldom repeated.
SHARED_BYTES = 256


class Compacting:
    """An op factory (ReadOptions.op_factory) that makes ops compact, the small tensor values
    of all the ops it makes shared (see above)."""
    __slots__ = ("values",)

    def __init__(self):
        self.values: dict = {}

    def __call__(self, op: Operation) -> Operation:
        return compact(op, self.values)


def compact(op: Operation, shared: dict | None = None) -> Operation:
    """`op` as a CompactOperation when it is a plain op (no blocks of its own, a name that is a
    string, if any), else `op` itself. `shared`: the small tensor values of the ops made before,
    by their contents; each of this op's that equals one of them is replaced by it."""
    if type(op) is not Operation or op.blocks:
        return op
    attributes = op.attributes
    name = None
    if "name" in attributes:
        name = _plain_string(attributes["name"])
        if name is None:
            return op
    outputs = op.outputs
    if name is not None and len(attributes) == 1:
        kept = name
    elif name is not None and len(attributes) == 2 and next(iter(attributes)) == "val" and len(outputs) == 1 \
            and outputs[0].name == name and type(attributes["val"]) is Value:
        # a const as every exporter writes it: its value, and the name of its output
        kept = attributes["val"] if shared is None else _shared(attributes["val"], shared)
    else:
        kept = tuple(x for key, value in attributes.items()
                     for x in (key, name if key == "name" else value if shared is None else _shared(value, shared)))
    arguments = []
    for key, bindings in op.inputs.items():
        arguments.append(key)
        arguments.append(bindings[0] if len(bindings) == 1 and type(bindings[0]) is str else
                         tuple(bindings) if shared is None else tuple(_shared(b, shared) for b in bindings))
    new = object.__new__(CompactOperation)
    for field, value in (("type", op.type), ("inputs", tuple(arguments)),
                         ("outputs", outputs[0] if len(outputs) == 1 else tuple(outputs)),
                         ("blocks", ()), ("attributes", kept), ("loc", op.loc)):
        _SLOT[field].__set__(new, value)
    return new


def _shared(value, shared: dict):
    """The Value in `shared` equal to `value` when it is a small tensor value (kept there when it
    is the first), else `value`."""
    t = value.type if type(value) is Value else None
    if type(t) is not TensorType or t.attributes is not NO_ATTRIBUTES or value.doc or type(value.data) is not TensorData:
        return value
    data = value.data
    elements = data.values
    if data.field in ("strings", "bytes", None):
        size = 0 if elements is None else sum(map(len, elements)) if data.field == "strings" else len(elements)
        contents = tuple(elements) if data.field == "strings" else elements
    else:   # a numpy array
        size, contents = elements.nbytes, elements.tobytes()
    if size > SHARED_BYTES:
        return value
    key = (t.dtype, t.shape, t.rank, data.field, contents)
    found = shared.get(key)
    if found is None:
        if type(contents) is bytes and data.field != "bytes":
            elements.flags.writeable = False
        found = shared[key] = value
    return found


def _plain_string(value) -> str | None:
    """The string of a string scalar Value that the compact form makes again equal, else None."""
    if type(value) is not Value or value.doc or value.type != _STRING or value.type.attributes is not NO_ATTRIBUTES:
        return None
    data = value.data
    if type(data) is not TensorData or data.field != "strings" or len(data.values) != 1 \
            or type(data.values[0]) is not str:
        return None
    return data.values[0]


_LOST = ("a compact op's {} are made afresh each time they are read, so this change would be lost: "
         "assign the field (op.{} = ...), which makes the op ordinary")


def _refuse(self, *args, **kwargs):
    raise TypeError(_LOST.format(self._field, self._field))


class _ReadOnlyList(list):
    """A list read from a compact op: equal to a list, refusing every change."""
    __slots__ = ()
    _field = "inputs"
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = extend = insert = pop = remove = clear = sort = reverse = _refuse

    def __reduce_ex__(self, protocol):
        return list, (list(self),)    # a copy is an ordinary list


class _ReadOnlyOutputs(_ReadOnlyList):
    __slots__ = ()
    _field = "outputs"


class _ReadOnlyBlocks(_ReadOnlyList):
    __slots__ = ()
    _field = "blocks"


class _ReadOnlyDict(dict):
    """A dict read from a compact op: equal to a dict, refusing every change."""
    __slots__ = ()
    _field = "inputs"
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __reduce_ex__(self, protocol):
        return dict, (_plain(self),)    # a copy is an ordinary dict of ordinary lists


class _ReadOnlyAttributes(_ReadOnlyDict):
    __slots__ = ()
    _field = "attributes"


_NO_BLOCKS = _ReadOnlyBlocks()


def _plain(value):
    """A field's value as an ordinary op holds it: read-only dicts and lists made ordinary."""
    if isinstance(value, _ReadOnlyDict):
        return {key: list(v) if isinstance(v, _ReadOnlyList) else v for key, v in value.items()}
    if isinstance(value, _ReadOnlyList):
        return list(value)
    return value


def _name_value(name: str) -> Value:
    return Value(_STRING, TensorData("strings", [name]))


def _read_inputs(op) -> dict:
    kept = _INPUTS.__get__(op)
    return _ReadOnlyDict({kept[i]: _ReadOnlyList((b,) if type(b := kept[i + 1]) is str else b)
                          for i in range(0, len(kept), 2)})


def _read_outputs(op) -> list:
    kept = _OUTPUTS.__get__(op)
    return _ReadOnlyOutputs(kept if type(kept) is tuple else (kept,))


def _read_attributes(op) -> dict:
    kept = _ATTRIBUTES.__get__(op)
    if type(kept) is str:
        return _ReadOnlyAttributes(name=_name_value(kept))
    if type(kept) is Value:
        return _ReadOnlyAttributes(val=kept, name=_name_value(_OUTPUTS.__get__(op).name))
    return _ReadOnlyAttributes({kept[i]: _name_value(kept[i + 1]) if kept[i] == "name" else kept[i + 1]
                                for i in range(0, len(kept), 2)})


def _read_name(op) -> str | None:
    kept = _ATTRIBUTES.__get__(op)
    if type(kept) is str:
        return kept
    if type(kept) is Value:
        return _OUTPUTS.__get__(op).name
    return next((kept[i + 1] for i in range(0, len(kept), 2) if kept[i] == "name"), None)


def _until_written(field: str, read) -> property:
    """A field read from the compact form; written, it makes the op ordinary first."""
    def write(op, value) -> None:
        op._expand()
        setattr(op, field, value)
    return property(read, write)


class CompactOperation(Operation):
    __slots__ = ()

    def __new__(cls, *args, **kwargs):
        """Made with arguments (dataclasses.replace does so): an ordinary Operation, whose
        fields are ordinary dicts and lists."""
        return Operation(*map(_plain, args), **{key: _plain(value) for key, value in kwargs.items()})

    inputs = _until_written("inputs", _read_inputs)
    outputs = _until_written("outputs", _read_outputs)
    attributes = _until_written("attributes", _read_attributes)
    blocks = _until_written("blocks", lambda op: _NO_BLOCKS)
    name = _until_written("name", _read_name)

    def _expand(self) -> None:
        """Become an ordinary Operation, with the same contents."""
        inputs, outputs, attributes = _plain(self.inputs), _plain(self.outputs), _plain(self.attributes)
        self.__class__ = Operation
        self.inputs, self.outputs, self.attributes, self.blocks = inputs, outputs, attributes, []

    def __eq__(self, other):
        if not isinstance(other, Operation):
            return NotImplemented
        return (self.type, self.inputs, self.outputs, self.blocks, self.attributes) == \
            (other.type, other.inputs, other.outputs, other.blocks, other.attributes)

    __hash__ = None

    def __reduce__(self):
        """Copied or pickled as the ordinary Operation it stands for."""
        return Operation, (self.type, _plain(self.inputs), _plain(self.outputs), [], _plain(self.attributes), self.loc)
