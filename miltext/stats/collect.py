"""A program's weights, found from its ops and types: a weight is a const's tensor (in a weight
file, or a float tensor of more than one element written in the program), or the tensor a
chain of constexpr ops gives out, made of the consts they read. Nothing here reads a weight
file: sizes follow from the types, as blob storage lays them out."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .. import dtypes
from ..ir import Blob, StateType, TensorType, Value
from ..ir.walk import blocks, operations
from ..text.blob_layout import data_bytes
from .schemes import COMPRESSIONS, PARAMETERS, Stage, stage

LARGE = 2048   # elements: coremltools compresses no weight smaller (its weight_threshold)
FLOATS = frozenset({"fp16", "fp32", "fp64", "bf16", "fp8e4m3fn", "fp8e5m2"})


@dataclass
class Part:
    """One stored tensor of a weight: the const (or immediate value) an op reads."""
    role: str                # the input it is given as (val, indices, lut, scale, ...)
    dtype: str
    shape: tuple
    count: int               # elements
    bits: int                # per element
    blob: tuple | None       # (weight file, offset), or None for a value written in the program
    bytes: int               # of data, packed as blob storage packs it (sub-byte elements LSB first)


@dataclass
class Weight:
    name: str                # the var the ops read
    function: str
    dtype: str               # what the ops read: the dense dtype
    shape: tuple
    parts: list = field(default_factory=list)
    stages: list = field(default_factory=list)     # the constexpr ops, outermost last
    ops: list = field(default_factory=list)        # the const and constexpr ops, in program order

    @property
    def params(self) -> int | None:
        t = TensorType(self.dtype, self.shape)
        return t.element_count

    @property
    def bytes(self) -> int | None:
        sizes = [p.bytes for p in self.parts]
        return None if None in sizes else sum(sizes)

    @property
    def bits_per_weight(self) -> float | None:
        """Stored bits (every part: indices, tables, scales, masks) per element given out."""
        if not self.params:
            return None
        return sum(p.count * p.bits for p in self.parts) / self.params

    @property
    def compressed(self) -> bool:
        return bool(self.stages)

    @property
    def form(self) -> str:
        """How it is stored, in a few words: its dtype, or its compression stages."""
        return " + ".join(s.text() for s in reversed(self.stages)) if self.stages else f"{self.dtype} dense"

    @property
    def layer(self) -> str:
        return layer_of(self.name)


# `layers_3_`, `blocks_0_`, `attn_0_`, `layer1_0_`: the first name part followed by a number,
# when something other than a conversion suffix (`_to_fp16`) follows it.
_NUMBERED = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z][A-Za-z0-9]*)*?_[0-9]+_(?!to_)(?=.)")
_FIRST_WORD = re.compile(r"^[A-Za-z0-9]+_(?=.)")


def layer_of(name: str) -> str:
    """The layer a converter's name puts a weight in: its numbered prefix (`layers_3_`), else
    its first word (`tok_`), else the name."""
    m = _NUMBERED.match(name) or _FIRST_WORD.match(name)
    return m.group(0) if m else name


@dataclass
class Found:
    weights: list
    op_counts: Counter
    functions: list


def collect(program) -> Found:
    counts, weights = Counter(), []
    for fname, fn in program.functions.items():
        _Walk(fname, counts, weights).walk(fn)
    return Found(weights, counts, list(program.functions))


class _Walk:
    """One function's blocks: what defines each name, who reads it, and the weights. Names
    are the function's (SSA: each defined once), so nested blocks share the tables."""

    def __init__(self, function: str, counts: Counter, weights: list):
        self.function, self.counts, self.weights = function, counts, weights
        self.defined = {}          # name -> (op, output index)
        self.readers = Counter()   # name -> reads by ops that are no constexpr, and block outputs
        self.candidates = []       # const and constexpr ops, in program order

    def walk(self, fn) -> None:
        for op in operations(fn):
            self.counts[op.type] += 1
            for index, var in enumerate(op.outputs):
                self.defined[var.name] = (op, index)
            if op.type == "const" or op.type in COMPRESSIONS:
                self.candidates.append(op)
            else:
                self.readers.update(_read_names(op))
        for block in blocks(fn):
            self.readers.update(block.outputs)
        for op in self.candidates:
            for var in op.outputs:
                if self.readers[var.name]:
                    weight = self._weight(var, op, self.defined)
                    if weight is not None:
                        self.weights.append(weight)

    def _weight(self, var, op, defined) -> Weight | None:
        t = var.type.wrapped if isinstance(var.type, StateType) else var.type
        if not isinstance(t, TensorType):
            return None
        weight = Weight(var.name, self.function, t.dtype, t.shape)
        if op.type == "const":
            value = op.attributes.get("val")
            part = _part("val", value) if value is not None else None
            if part is None or part.blob is None and (t.dtype not in FLOATS or part.count < 2):
                return None     # a number, an axis, a shape: no weight
            weight.parts.append(part)
            weight.ops.append(op)
            return weight
        self._gather(weight, op, defined, set())
        return weight

    def _gather(self, weight: Weight, op, defined: dict, seen: set) -> None:
        """The parts and stages of the constexpr op `op`, and of the ops it reads."""
        if id(op) in seen:
            return
        seen.add(id(op))
        weight.stages.insert(0, stage(op, lambda o, key: _input_type(o, key, defined)))
        for key, binding in _bindings(op):
            if key in PARAMETERS:
                continue
            if isinstance(binding, Value):
                part = _part(key, binding)
                if part is not None:
                    weight.parts.append(part)
                continue
            source = defined.get(binding)
            if source is None:
                continue
            producer = source[0]
            if producer.type == "const":
                value = producer.attributes.get("val")
                part = _part(key, value) if value is not None else None
                if part is not None:
                    weight.parts.append(part)
                    weight.ops.append(producer)
            elif producer.type in COMPRESSIONS:
                self._gather(weight, producer, defined, seen)
        weight.ops.append(op)


def _bindings(op):
    for key, found in op.inputs.items():
        for binding in found:
            yield key, binding
    for key, value in op.attributes.items():
        if key not in op.inputs:
            yield key, value


def _read_names(op):
    for found in op.inputs.values():
        for binding in found:
            if isinstance(binding, str):
                yield binding


def _input_type(op, key: str, defined: dict):
    found = op.inputs.get(key) or ([op.attributes[key]] if key in op.attributes else [])
    if len(found) != 1:
        return None
    binding = found[0]
    if isinstance(binding, Value):
        return binding.type
    source = defined.get(binding)
    return source[0].outputs[source[1]].type if source is not None else None


def _part(role: str, value: Value) -> Part | None:
    t = value.type
    size = data_bytes(t)      # None: no tensor of numbers of a known size
    if size is None:
        return None
    blob = (value.data.file, value.data.offset) if isinstance(value.data, Blob) else None
    return Part(role, t.dtype, t.shape, t.element_count, dtypes.by_name(t.dtype).bits, blob, size)


__all__ = ["Part", "Weight", "Found", "collect", "layer_of", "Stage"]
