"""Hypothesis strategies for random MIL programs: every dtype and kind of value, every field
set or unset, special floats, names and strings that need quoting, nested blocks."""
import numpy as np
from hypothesis import HealthCheck, settings, strategies as st

from miltext import dtypes, packing
from miltext.ir.program import Block, Function, Operation, Program, Var
from miltext.ir.types import MISSING, UNSET_DIM, VARIADIC, DictType, ListType, StateType, TensorType, TupleType, UnknownType
from miltext.ir.values import FIELD_NUMPY, Blob, DictData, EmptyImmediate, ListData, TensorData, TupleData, Value, encode_tensor

INT64 = st.integers(-2**63, 2**63 - 1)
UINT64 = st.integers(0, 2**64 - 1)

# Names: identifiers mostly, and the awkward ones real models have (dots, slashes, colons,
# spaces, quotes, unicode, control characters, keywords, the empty name).
awkward = st.sampled_from(["layer.0/relu:0", "with space", 'quote"in', "back\\slash", "café",
                           "123", "", "fp32", "List", "program", "name", "val", "nan", "%x",
                           "tab\there", "new\nline", "\x00nul", "a@b", "True", "blob", "_"])
identifier = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
names = st.one_of(identifier, identifier, awkward)
strings = st.one_of(st.text(max_size=6), awkward)

dims = st.one_of(st.integers(0, 4), st.integers(0, 2**64 - 1), st.none(), st.just(VARIADIC), st.just(UNSET_DIM))
dtype_names = st.sampled_from([d for d in dtypes.NAMES] + ["dtype57"])
small_dtype_names = st.sampled_from([d for d in dtypes.NAMES if d not in ("unused",)])


@st.composite
def tensor_types(draw, values_strategy=None, static=False):
    dtype = draw(small_dtype_names if static else dtype_names)
    if static:
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=3)))
        return TensorType(dtype, shape)
    shape = tuple(draw(st.lists(dims, max_size=3)))
    rank = draw(st.one_of(st.none(), st.none(), st.integers(-1, 4), INT64))
    attrs = draw(st.dictionaries(names, values_strategy, max_size=2)) if values_strategy is not None else {}
    return TensorType(dtype, shape, rank, attrs)


def value_types(values_strategy=None):
    leaf = st.one_of(tensor_types(values_strategy), st.just(UnknownType()))
    optional = lambda s: st.one_of(st.none(), s)  # noqa: E731
    return st.recursive(leaf, lambda inner: st.one_of(
        st.builds(ListType, optional(inner), st.one_of(dims, st.just(MISSING))),
        st.builds(TupleType, st.lists(inner, max_size=3)),
        st.builds(DictType, optional(inner), optional(inner)),
        st.builds(StateType, optional(inner)),
    ), max_leaves=4)


def _float_values(dt, draw, n):
    """Elements of a float dtype drawn bit by bit: NaN payloads, infinities, -0.0, denormals."""
    width = np.dtype(packing.BITS_DTYPE[dt.name]).itemsize * 8
    special = {"fp32": [0x7FC00000, 0x7FC00001, 0xFFC00000, 0x7F800001, 0x80000000, 1, 0x7F800000],
               "fp16": [0x7E00, 0x7C01, 0x8000, 1, 0x7C00, 0xFE01],
               "fp64": [0x7FF8000000000000, 0x7FF0000000000001, 0x8000000000000000, 1],
               "bf16": [0x7FC0, 0x7F81, 0x8000, 1], "fp8e4m3fn": [0x7F, 0xFF, 0x80, 1],
               "fp8e5m2": [0x7F, 0x7D, 0xFC, 0x80, 1]}[dt.name]
    bits = draw(st.lists(st.one_of(st.integers(0, 2**width - 1), st.sampled_from(special)), min_size=n, max_size=n))
    return packing.bits_to_float(dt, np.array(bits, dtype=packing.BITS_DTYPE[dt.name]))


@st.composite
def tensor_elements(draw, t: TensorType, n: int):
    dt = dtypes.by_name(t.dtype)
    if dt.kind == "float":
        return _float_values(dt, draw, n)
    if dt.kind == "string":
        return np.array(draw(st.lists(strings, min_size=n, max_size=n)), dtype=object)
    if dt.kind == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool)
    low, high = (0, (1 << dt.bits) - 1) if dt.kind == "uint" else (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1)
    return np.array(draw(st.lists(st.integers(low, high), min_size=n, max_size=n)), dtype=dt.numpy)


@st.composite
def raw_tensor_data(draw):
    """A TensorValue with any field: what a hand-made or odd proto may hold."""
    field = draw(st.sampled_from([None, *FIELD_NUMPY, "strings", "bytes"]))
    if field is None:
        return TensorData(None)
    if field == "bytes":
        return TensorData("bytes", draw(st.binary(max_size=9)))
    if field == "strings":
        return TensorData("strings", draw(st.lists(strings, max_size=3)))
    n = draw(st.integers(0, 4))
    dtype = FIELD_NUMPY[field]
    if dtype.kind == "f":
        return TensorData(field, _float_values(dtypes.by_name("fp32" if dtype.itemsize == 4 else "fp64"), draw, n))
    if dtype.kind == "b":
        return TensorData(field, draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    info = np.iinfo(dtype)
    return TensorData(field, draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=n, max_size=n)))


@st.composite
def tensor_values(draw, large=False):
    """A well-formed tensor value, as coremltools would store it."""
    t = draw(tensor_types(static=True))
    if large:
        t = TensorType(t.dtype, (draw(st.integers(65, 200)),))
    n = int(np.prod(t.shape, dtype=np.int64)) if t.shape else 1
    dt = dtypes.by_name(t.dtype)
    return Value(t, encode_tensor(dt, draw(tensor_elements(t, n))))


def values():
    def as_value(data):
        return st.builds(Value, st.one_of(st.none(), value_types()), data, st.one_of(st.just(""), strings))

    def extend(inner):
        element = as_value(inner)
        return st.one_of(
            st.builds(TupleData, st.lists(element, max_size=3)),
            st.builds(ListData, st.lists(element, max_size=3)),
            st.builds(DictData, st.lists(st.tuples(st.one_of(st.none(), element),
                                                   st.one_of(st.none(), element)), max_size=2)),
        )

    data = st.recursive(st.one_of(raw_tensor_data(), st.builds(Blob, UINT64, strings),
                                  st.builds(Blob, UINT64), st.just(EmptyImmediate())),
                        extend, max_leaves=3)
    odd = as_value(st.one_of(st.none(), data))
    return st.one_of(tensor_values(), tensor_values(), tensor_values(large=True), odd,
                     st.builds(_typed_container, value_types(), st.data()))


def _typed_container(t, data):
    """A value whose data follows its (possibly container) type."""
    return Value(t, _data_for(t, data, depth=0))


def _data_for(t, data, depth):
    if depth > 3:
        return None
    if isinstance(t, StateType):
        return _data_for(t.wrapped, data, depth) if t.wrapped is not None else None
    if isinstance(t, TensorType):
        if not t.is_static or t.dtype in ("unused", "dtype57"):
            return data.draw(raw_tensor_data())
        n = 1
        for d in t.shape:
            n *= d
        if n > 64:
            return data.draw(raw_tensor_data())
        return encode_tensor(dtypes.by_name(t.dtype), data.draw(tensor_elements(t, n)))
    if isinstance(t, ListType):
        k = data.draw(st.integers(0, 2))
        return ListData([Value(t.element, _data_for(t.element, data, depth + 1)) for _ in range(k)])
    if isinstance(t, TupleType):
        return TupleData([Value(x, _data_for(x, data, depth + 1)) for x in t.types])
    if isinstance(t, DictType):
        k = data.draw(st.integers(0, 2))
        return DictData([(Value(t.key, _data_for(t.key, data, depth + 1)),
                          Value(t.value, _data_for(t.value, data, depth + 1))) for _ in range(k)])
    return None


value_strategy = st.deferred(values)
bindings = st.lists(st.one_of(names, value_strategy, st.none()), max_size=3)
var_types = st.one_of(st.none(), value_types(value_strategy))
vars_ = st.builds(Var, names, var_types)
attributes = st.dictionaries(names, value_strategy, max_size=2)


def blocks(depth=0):
    ops = st.lists(operations(depth), max_size=3)
    return st.builds(Block, st.lists(vars_, max_size=2), st.lists(names, max_size=2), ops,
                     st.one_of(st.just({}), attributes))


def operations(depth):
    nested = st.lists(st.deferred(lambda: blocks(depth + 1)), max_size=2) if depth < 2 else st.just([])
    return st.builds(Operation, names, st.dictionaries(names, bindings, max_size=3),
                     st.lists(vars_, max_size=2), nested, attributes)


functions = st.builds(Function, st.lists(vars_, max_size=2), st.one_of(st.sampled_from(["CoreML7", "CoreML8", ""]), names),
                      st.dictionaries(st.one_of(st.sampled_from(["CoreML7", "CoreML8"]), names), blocks(), max_size=2),
                      st.one_of(st.just({}), attributes))

programs = st.builds(Program, st.dictionaries(names, functions, max_size=2), st.one_of(st.just(1), INT64),
                     st.one_of(st.just(""), strings), st.one_of(st.just({}), attributes))


# How the round-trip properties run: many examples, no deadline (big programs print slowly).
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
