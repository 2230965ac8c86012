"""A model description derived from a program, the way coremltools derives one when it saves a
program it converted (`backend/mil/load.py`), for MIL text that does not give its own.

- Each input of a function is an array feature of its shape and dtype (fp32, fp16, int32 or int8;
  a scalar is shape [1]). An unknown size is written 1, with a shape range of [1, 2] for it, as
  coremltools does when no range was given. A state input, (..., fp16)(State), is a state.
- Each output is an array of its dtype, with its shape when every size is known; a dictionary
  output is a dictionary feature. A classify op's outputs make a classifier: the label is a string
  (or int64) feature, and the description names the label and the probabilities.
- One function gives the description's inputs and outputs; several give a function description
  each, with `main` as the default function.
"""
from __future__ import annotations

from ..ir import DictType, StateType, TensorType

# MLMultiArray's data types (Model.proto's ArrayFeatureType), by the names MIL text gives them.
ARRAY_DTYPES = {65568: "fp32", 65600: "fp64", 131104: "int32", 131080: "int8", 65552: "fp16"}
ARRAY_CODES = {name: code for code, name in ARRAY_DTYPES.items()}

# coremltools' _OPSET, turned around: the specification version each opset needs.
OPSET_SPECIFICATION = {"CoreML3": 4, "CoreML4": 5, "CoreML5": 6, "CoreML6": 7, "CoreML7": 8,
                       "CoreML8": 9, "CoreML9": 10}
LOWEST_ML_PROGRAM = 6       # iOS15, the first specification with ML programs
MULTIFUNCTION = 9           # iOS18: states and several functions
DEFAULT_FUNCTION = "main"
UNKNOWN_SIZE = (1, 2)       # coremltools' default range for an unknown size (ML programs)


class DescriptionError(ValueError):
    """A program that no model description can describe; `loc` is where, when known."""

    def __init__(self, message: str, loc=None):
        super().__init__(message)
        self.message, self.loc = message, loc


def specification_version(program) -> int:
    """The lowest specification version whose opsets cover every block of the program."""
    version = LOWEST_ML_PROGRAM
    for fn in program.functions.values():
        for opset in (fn.opset, *fn.blocks):
            version = max(version, OPSET_SPECIFICATION.get(opset, LOWEST_ML_PROGRAM))
        if any(isinstance(v.type, StateType) for v in fn.inputs):
            version = max(version, MULTIFUNCTION)
    if len(program.functions) > 1:
        version = max(version, MULTIFUNCTION)
    return version


def derived_spec(program):
    """A Model message (without its program): specification version and derived description."""
    from ..proto import schema
    spec = schema.Model(specificationVersion=specification_version(program))
    desc = spec.description
    desc.SetInParent()
    if not program.functions:
        raise DescriptionError("the program has no function to describe")
    if len(program.functions) == 1:
        (name, fn), = program.functions.items()
        _describe(desc, name, fn)
        return spec
    if DEFAULT_FUNCTION not in program.functions:
        raise DescriptionError(f"a program of several functions needs one called {DEFAULT_FUNCTION!r} "
                               "to be the default (or a model section naming defaultFunctionName)")
    for name in sorted(program.functions, key=lambda n: (n != DEFAULT_FUNCTION, n)):
        fd = desc.functions.add(name=name)
        _describe(fd, name, program.functions[name])
    desc.defaultFunctionName = DEFAULT_FUNCTION
    return spec


def _describe(target, name: str, fn) -> None:
    """Inputs, states, outputs and classifier names of one function into `target` (a model
    description or a function description: they have the same fields for these)."""
    if fn.opset not in fn.blocks:
        raise DescriptionError(f"function {name!r} has no block for its opset {fn.opset!r}", fn.loc)
    for var in fn.inputs:
        if isinstance(var.type, StateType):
            _state(target.state.add(name=var.name), var)
        else:
            _input(target.input.add(name=var.name), var)
    block = fn.block
    types = {v.name: v.type for v in fn.inputs}
    classify = None
    for op in block.operations:
        types.update((v.name, v.type) for v in op.outputs)
        if op.type == "classify" and len(op.outputs) == 2:
            classify = op
    labels = {}
    if classify is not None and all(v.name in block.outputs for v in classify.outputs):
        label, probs = classify.outputs
        target.predictedFeatureName, target.predictedProbabilitiesName = label.name, probs.name
        labels[label.name] = label.type
    for out in block.outputs:
        _output(target.output.add(name=out), types.get(out), out in labels, block.loc)


def describe(feature, var, kind: str) -> None:
    """Fill `feature` (a FeatureDescription) for `var`, as a derived description has it:
    `kind` "input", "state" or "output" (miltext.edit describes the features it adds)."""
    if kind == "output":
        _output(feature, var.type, False, var.loc)
    else:
        (_state if kind == "state" else _input)(feature, var)


def _input(feature, var) -> None:
    t = var.type
    if not isinstance(t, TensorType):
        raise DescriptionError(f"input %{var.name} is not a tensor: a model's inputs are tensors and states", var.loc)
    if t.rank is not None:
        raise DescriptionError(f"input %{var.name} has no fixed rank: a model's inputs have one", var.loc)
    array = feature.type.multiArrayType
    array.dataType = _array_code(t, f"input %{var.name}", var.loc)
    if not t.shape:
        array.shape.append(1)   # a scalar input is an array of one
        return
    if any(type(d) is not int and d is not None for d in t.shape):
        raise DescriptionError(f"input %{var.name} has a variadic size: a model's inputs have a fixed rank", var.loc)
    array.shape.extend(1 if d is None else d for d in t.shape)
    if None in t.shape:
        array.shapeRange.SetInParent()
        for d in t.shape:
            r = array.shapeRange.sizeRanges.add()
            r.lowerBound, r.upperBound = UNKNOWN_SIZE if d is None else (d, d)


def _state(feature, var) -> None:
    t = var.type.wrapped
    if not (isinstance(t, TensorType) and t.is_static and t.dtype == "fp16"):
        raise DescriptionError(f"state %{var.name} must be an fp16 tensor of a fixed shape, as Core ML asks", var.loc)
    array = feature.type.stateType.arrayType
    array.dataType = ARRAY_CODES["fp16"]
    array.shape.extend(t.shape)


def _output(feature, t, is_label: bool, loc) -> None:
    ft = feature.type
    if t is None:
        raise DescriptionError(f"output %{feature.name} has no type to describe it by", loc)
    if is_label and isinstance(t, TensorType) and t.dtype in ("string", "int64") and not t.shape:
        getattr(ft, "stringType" if t.dtype == "string" else "int64Type").SetInParent()
        return
    if isinstance(t, DictType) and isinstance(t.key, TensorType) and t.key.dtype in ("string", "int64"):
        key = "stringKeyType" if t.key.dtype == "string" else "int64KeyType"
        getattr(ft.dictionaryType, key).SetInParent()
        return
    if not isinstance(t, TensorType):
        raise DescriptionError(f"output %{feature.name} is not a tensor or a dictionary: a model cannot return it", loc)
    array = ft.multiArrayType
    array.dataType = _array_code(t, f"output %{feature.name}", loc)
    if t.shape and t.is_static:
        array.shape.extend(t.shape)


def _array_code(t: TensorType, what: str, loc) -> int:
    code = ARRAY_CODES.get(t.dtype)
    if code is None or t.dtype == "fp64":
        raise DescriptionError(f"{what} is {t.dtype}: a model's arrays are fp32, fp16, int32 or int8", loc)
    return code
