"""coremltools' own inference, for the ops no native rule covers: the op is built alone, with
its inputs' types and known values, in a tiny pymil program through coremltools' builder, and
its output types are read back. Imported only when needed (coremltools is slow to import)."""
from __future__ import annotations

import logging
from functools import lru_cache

import numpy as np

from ..ir import ListType, StateType, TensorType
from .errors import InferenceError, Refused
from .symbols import Sym, fully_known, known


def infer(operands) -> list:
    """The output types coremltools gives the op (and their values, when it knows them)."""
    logger = logging.getLogger("coremltools")
    level = logger.level
    logger.setLevel(logging.ERROR)   # its import and its builder warn about what is no fault here
    try:
        return _infer(operands)
    finally:
        logger.setLevel(level)


def _infer(operands) -> list:
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil._deployment_compatibility import AvailableTarget
    from coremltools.converters.mil.mil import Function

    op = operands.op
    builder = getattr(mb, op.type, None)
    if builder is None:
        raise InferenceError.at(op.loc, f"cannot infer the output types of {op.type}: neither "
                                        "miltext nor coremltools knows the op")
    placeholders, arguments, symbols = {}, {}, {}
    keys = list(op.inputs) + [k for k in op.attributes if k != "name"]
    for key in keys:
        bound = [_argument(t, v, c, f"{key}_{i}", placeholders, symbols, op) for i, (t, v, c)
                 in enumerate(zip(operands.types(key), operands.values(key), operands.consts(key)))]
        arguments[key] = tuple(bound) if key in op.inputs and _is_tuple_input(operands, key) \
            else bound[0] if len(bound) == 1 else tuple(bound)
    opset = AvailableTarget(_spec_version(operands.opset, op))
    inputs = {name: mb.placeholder(shape=shape, dtype=dtype) for name, (shape, dtype) in placeholders.items()}
    try:
        with Function(inputs, opset_version=opset) as function:
            by_name = {name: function.inputs[name] for name in inputs}
            kwargs = {k: _resolve(v, by_name) for k, v in arguments.items()}
            out = builder(**kwargs, name="inferred")
    except Exception as e:  # noqa: BLE001 (coremltools checks an op by any exception: the text is at fault)
        raise Refused(f"{op.type}: coremltools cannot type it: {str(e) or type(e).__name__}",
                      op.loc, str(e) or type(e).__name__) from None
    outputs = list(out) if isinstance(out, (list, tuple)) else [out]
    operands.output_values = [_known_value(v) for v in outputs]
    ours = {theirs: sym for sym, theirs in symbols.items()}   # the input sizes coremltools passes on
    return [miltext_type(v.sym_type, ours) for v in outputs]


class _Placeholder(str):
    """The name of a function input of the tiny program, standing for a computed input."""


_SCALAR = object()   # marks a placeholder that stands for a rank-0 input


def _argument(t, value, const: bool, name: str, placeholders: dict, symbols: dict, op):
    """The builder's argument for one input binding; `symbols` gives each of miltext's Syms
    one coremltools symbol, so that sizes shared by inputs stay shared."""
    from coremltools.converters.mil.mil import get_new_symbol, types as ct_types

    if isinstance(t, TensorType) and t.dtype not in _coremltools_dtypes():
        raise InferenceError.at(op.loc, f"cannot infer the output types of {op.type}: coremltools has "
                                        f"no {t.dtype} type; write the output types in the text")
    if value is not None and not fully_known(value):
        if isinstance(t, TensorType) and t.dtype.startswith("int") and value.ndim <= 1:
            return _sizes(value, t.dtype, name, placeholders, symbols)
        value = None    # partly known, beyond what is rebuilt: coremltools gets its type only
    if value is None and const and isinstance(t, TensorType) and t.is_static:
        value = np.zeros(t.shape)   # a weight not at hand: its shape is what inference needs
    if value is not None and isinstance(t, TensorType):
        return _numpy(value, t.dtype)
    if isinstance(t, TensorType) and t.rank is None:
        shape = tuple(d if known(d) else symbols.setdefault(d, get_new_symbol()) if isinstance(d, Sym)
                      else get_new_symbol() for d in t.shape)
        placeholders[name] = (shape or (1,), ct_types.string_to_builtin(t.dtype))
        return _Placeholder(name) if t.shape else (_Placeholder(name), _SCALAR)
    raise InferenceError.at(op.loc, f"cannot infer the output types of {op.type}: an input "
                                    f"of type {t!r} is beyond what coremltools is given here")


@lru_cache(maxsize=1)
def _coremltools_dtypes() -> frozenset:
    """The dtype names coremltools' type system knows (it has no bf16 or fp8, for one)."""
    from coremltools.converters.mil.mil import types as ct_types
    known = set()
    for name in ("bool", "string", "fp16", "fp32", "fp64", "bf16", "fp8e4m3fn", "fp8e5m2", "int4", "int8",
                 "int16", "int32", "int64", "uint1", "uint2", "uint3", "uint4", "uint6", "uint8", "uint16",
                 "uint32", "uint64"):
        try:
            ct_types.string_to_builtin(name)
        except (KeyError, ValueError):
            continue
        known.add(name)
    return frozenset(known)


class _Sizes:
    """A value partly known at run time (sizes read from shapes), to be rebuilt in the tiny
    program the way converted programs compute one: gathered from the shape of an input whose
    dims are its symbols, so that coremltools knows it as the same symbolic value."""

    def __init__(self, value, dtype: str, holder: str, positions: dict):
        self.value, self.dtype, self.holder, self.positions = value, dtype, holder, positions

    def build(self, by_name):
        from coremltools.converters.mil import Builder as mb
        shape = mb.shape(x=by_name[self.holder])
        parts = [mb.gather(x=shape, indices=self.positions[v], axis=0) if isinstance(v, Sym) else np.int32(v)
                 for v in self.value.reshape(-1)]
        built = parts[0] if self.value.ndim == 0 else mb.concat(values=parts, axis=0)
        return built if self.dtype == "int32" else mb.cast(x=built, dtype=self.dtype)


def _sizes(value, dtype: str, name: str, placeholders: dict, symbols: dict) -> _Sizes:
    from coremltools.converters.mil.mil import get_new_symbol, types as ct_types
    positions: dict = {}
    for v in value.reshape(-1):
        if isinstance(v, Sym) and v not in positions:
            positions[v] = len(positions)
    holder = f"sizes_of_{name}"
    placeholders[holder] = (tuple(symbols.setdefault(v, get_new_symbol()) for v in positions), ct_types.fp32)
    return _Sizes(value, dtype, holder, positions)


def _resolve(argument, by_name):
    from coremltools.converters.mil import Builder as mb

    if isinstance(argument, _Sizes):
        return argument.build(by_name)
    if isinstance(argument, tuple) and len(argument) == 2 and argument[1] is _SCALAR:
        return mb.squeeze(x=by_name[argument[0]])   # coremltools has no rank-0 function inputs
    if isinstance(argument, _Placeholder):
        return by_name[argument]
    if isinstance(argument, tuple):
        return tuple(_resolve(a, by_name) for a in argument)
    return argument


def _numpy(value, dtype: str):
    from coremltools.converters.mil.mil import types as ct_types

    if dtype == "string":
        return str(value.reshape(-1)[0]) if value.ndim == 0 or value.size == 1 else value
    array = np.asarray(value, dtype=ct_types.nptype_from_builtin(ct_types.string_to_builtin(dtype)))
    return array[()] if array.ndim == 0 else array   # a scalar, as the builder types scalars


def _is_tuple_input(operands, key: str) -> bool:
    return operands.kind(key) == "tuple"


def _spec_version(opset: str, op) -> int:
    """`CoreML<N>` is the opset of specification version N + 1 (CoreML7: iOS17, version 8)."""
    digits = "".join(c for c in opset if c.isdigit())
    if not opset.startswith("CoreML") or not digits:
        raise InferenceError.at(op.loc, f"coremltools knows no opset {opset!r}")
    return int(digits) + 1


def _known_value(var):
    val = var.val
    return np.asarray(val) if isinstance(val, (np.ndarray, np.generic, int, float, bool)) else None


def miltext_type(sym_type, symbols=None):
    """A pymil type as a miltext type: symbolic dims unknown, or the Syms `symbols` maps them to."""
    from coremltools.converters.mil.mil import types as ct_types
    from coremltools.converters.mil.mil.types.symbolic import is_symbolic

    if ct_types.is_state(sym_type):
        return StateType(miltext_type(sym_type.wrapped_type(), symbols))
    if ct_types.is_list(sym_type):
        length = sym_type.T[1]
        return ListType(miltext_type(sym_type.T[0], symbols), None if is_symbolic(length) or length is None else int(length))
    if ct_types.is_tensor(sym_type):
        shape = tuple((symbols or {}).get(d) if is_symbolic(d) else int(d) for d in sym_type.get_shape())
        return TensorType(ct_types.builtin_to_string(sym_type.get_primitive()), shape)
    return TensorType(ct_types.builtin_to_string(sym_type), ())
