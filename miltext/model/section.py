"""The model section of MIL text: what a .mlmodel holds around its program, written so that a
reader sees the model's features at the top of the file and nothing is lost.

    model(specificationVersion=8, predictedFeatureName="label") {
      input %image: image(width=224, height=224, colorSpace="RGB")
      input %x: (1, 3, 16, 16, fp16)[shapeRange=[[1, 1], [3, 3], [8, 64], [8, 64]]]
      output %label: (string)
      output %probs: dictionary(keyType="string")
      metadata(author="me", license="MIT")
      userDefined(com.github.apple.coremltools.version="9.0", "training-run"="42")
    }

Field names are Model.proto's. A feature whose type the readable forms cannot say exactly is
written `encoded(data=...)` (its serialized FeatureDescription), and fields this schema does
not know ride along as `unknownFields=` bytes, so the text always gives back the same model.
"""
from __future__ import annotations

from ..dtypes import by_name
from ..errors import ParseError
from ..ir import StateType, TensorType, Value
from ..lazy import numpy as np
from ..text import lexemes
from ..text.mil.printer import type_text, value_text
from ..text.section_syntax import Call, Feature, Section
from .derive import ARRAY_CODES, ARRAY_DTYPES, specification_version

WIDTH = 120                 # a line longer than this puts one argument of its call per line
INDENT = "  "
SCALAR_KINDS = {"int64": "int64Type", "fp64": "doubleType", "string": "stringType"}
COLOR_SPACES = {10: "GRAYSCALE", 20: "RGB", 30: "BGR", 40: "GRAYSCALE_FLOAT16"}
KEY_TYPES = {"int64": "int64KeyType", "string": "stringKeyType"}
TOP_KINDS = ("input", "output", "state", "trainingInput")    # the feature lists of a description
FUNCTION_KINDS = ("input", "output", "state")                # and of a function description
DESCRIPTION_STRINGS = ("predictedFeatureName", "predictedProbabilitiesName", "defaultFunctionName")
METADATA_STRINGS = ("author", "license", "shortDescription", "versionString")


class SectionError(ValueError):
    """A model section that does not say a model; `loc` is where, when known."""

    def __init__(self, message: str, loc=None):
        super().__init__(message)
        self.message, self.loc = message, loc


# ---- model → text -------------------------------------------------------------------------------

def section_text(spec) -> str:
    """The model section for `spec` (a Model message; its mlProgram is not looked at)."""
    return "\n".join(text for _, text in section_lines(spec)) + "\n"


def section_lines(spec) -> list[tuple]:
    """The model section for `spec` as (key, text) pairs: what each item's text (one line or
    more) says, keyed the way `item_key` keys what an author wrote, so a formatter can put
    their comments back beside it."""
    version = spec.specificationVersion   # its text when it is a bare int32: no numpy (see miltext.lazy)
    args = {"specificationVersion": str(version) if -2**31 <= version < 2**31 else _int_value(version)}
    desc = spec.description
    for key in DESCRIPTION_STRINGS:
        if getattr(desc, key):
            args[key] = Value.tensor(getattr(desc, key))
    _add_unknown(args, spec, "unknownFields")
    _add_unknown(args, desc, "descriptionUnknownFields")
    head = call_text("model", args, "")
    if not spec.HasField("description"):
        return [(("model",), head)]
    lines = [(("model",), head + " {")]
    for kind in TOP_KINDS:
        lines += [((kind, f.name), INDENT + feature_text(kind, f, INDENT)) for f in getattr(desc, kind)]
    if desc.HasField("metadata"):
        lines += _metadata_lines(desc.metadata)
    for fn in desc.functions:
        lines += _function_lines(fn)
    lines.append((("end",), "}"))
    return lines


def item_key(item, function: str | None = None) -> tuple:
    """The key section_lines gives the text of an item of a parsed section (a Feature or a
    Section, inside the function description named `function` or not)."""
    if isinstance(item, Feature):
        return (item.kind, item.name) if function is None else ("function", function, item.kind, item.name)
    if item.call.name == "function":
        return ("function", function_name(item))
    return (item.call.name,)


def function_name(section: Section) -> str | None:
    """The name a function description of a parsed section gives, None if it gives none."""
    try:
        return _str(section.call.args.get("name"), section.call, "name")
    except SectionError:
        return None


def feature_text(kind: str, feature, indent: str) -> str:
    head = f"{kind} {lexemes.var(feature.name)}: "
    t = readable_type(feature)
    if isinstance(t, Call):
        return head + call_text(t.name, t.args, indent + " " * len(head))
    return head + type_text(t)


def call_text(name: str, args: dict, indent: str) -> str:
    """`name(k=v, ...)`, one argument per line (aligned) when one line would be too long; a
    value is a Value or its text."""
    head = name + "("
    parts = [f"{lexemes.name(k)}={v if isinstance(v, str) else value_text(v)}" for k, v in args.items()]
    one_line = head + ", ".join(parts) + ")"
    if len(indent) + len(one_line) <= WIDTH or len(parts) < 2:
        return one_line
    return head + (",\n" + indent + " " * len(head)).join(parts) + ")"


def _metadata_lines(meta) -> list[tuple]:
    args = {key: Value.tensor(getattr(meta, key)) for key in METADATA_STRINGS if getattr(meta, key)}
    _add_unknown(args, meta, "unknownFields")
    lines = []
    if args or not meta.userDefined:
        lines.append((("metadata",), INDENT + call_text("metadata", args, INDENT)))
    if meta.userDefined:
        entries = {k: Value.tensor(meta.userDefined[k]) for k in sorted(meta.userDefined)}
        lines.append((("userDefined",), INDENT + call_text("userDefined", entries, INDENT)))
    return lines


def _function_lines(fn) -> list[tuple]:
    args = {"name": Value.tensor(fn.name)}
    for key in ("predictedFeatureName", "predictedProbabilitiesName"):
        if getattr(fn, key):
            args[key] = Value.tensor(getattr(fn, key))
    _add_unknown(args, fn, "unknownFields")
    lines = [(("function", fn.name), INDENT + call_text("function", args, INDENT) + " {")]
    inner = INDENT * 2
    for kind in FUNCTION_KINDS:
        lines += [(("function", fn.name, kind, f.name), inner + feature_text(kind, f, inner))
                  for f in getattr(fn, kind)]
    lines.append((("function end", fn.name), INDENT + "}"))
    return lines


def readable_type(feature):
    """The type of a FeatureDescription as the text writes it: a MIL type (tensors, states,
    scalars) or a call (images, dictionaries, sequences); `encoded(...)` when neither says it
    exactly."""
    t = _readable(feature)
    if t is not None:
        rebuilt = _schema().FeatureDescription(name=feature.name)
        try:
            _fill_feature(rebuilt, t)
        except SectionError:
            t = None
        else:
            if rebuilt.SerializeToString(deterministic=True) != feature.SerializeToString(deterministic=True):
                t = None
    if t is None:
        rest = _schema().FeatureDescription()
        rest.CopyFrom(feature)
        rest.ClearField("name")
        return Call("encoded", {"data": _bytes_value(rest.SerializeToString(deterministic=True))})
    return t


def _readable(feature):
    t = feature.type
    extra = {}
    if feature.shortDescription:
        extra["shortDescription"] = Value.tensor(feature.shortDescription)
    if t.isOptional:
        extra["isOptional"] = Value.tensor(True)
    kind = t.WhichOneof("Type")
    if kind == "multiArrayType":
        return _array_type(t.multiArrayType, extra)
    if kind == "stateType" and t.stateType.HasField("arrayType"):
        wrapped = _array_type(t.stateType.arrayType, extra)
        return None if wrapped is None else StateType(wrapped)
    for dtype, field in SCALAR_KINDS.items():
        if kind == field:
            return TensorType(dtype, (), attributes=extra)
    if kind == "imageType":
        return Call("image", {**_image_args(t.imageType), **extra})
    if kind == "dictionaryType":
        key = t.dictionaryType.WhichOneof("KeyType")
        names = {v: k for k, v in KEY_TYPES.items()}
        return Call("dictionary", {"keyType": Value.tensor(names[key]), **extra}) if key else None
    if kind == "sequenceType":
        seq = t.sequenceType
        element = {"int64Type": "int64", "stringType": "string"}.get(seq.WhichOneof("Type"))
        if element is None:
            return None
        args = {"elementType": Value.tensor(element)}
        if seq.HasField("sizeRange"):
            args["sizeRange"] = _ints_value([seq.sizeRange.lowerBound, seq.sizeRange.upperBound], (2,))
        return Call("sequence", {**args, **extra})
    return None


def _array_type(a, extra: dict):
    dtype = ARRAY_DTYPES.get(a.dataType)
    if dtype is None or any(d < 0 for d in a.shape):
        return None
    attrs = {}
    flex = a.WhichOneof("ShapeFlexibility")
    if flex == "shapeRange":
        ranges = [(r.lowerBound, r.upperBound) for r in a.shapeRange.sizeRanges]
        attrs["shapeRange"] = _ints_value(ranges, (len(ranges), 2))
    elif flex == "enumeratedShapes":
        shapes = [tuple(s.shape) for s in a.enumeratedShapes.shapes]
        if len({len(s) for s in shapes}) > 1:
            return None  # shapes of several ranks: no rectangular list says them
        attrs["enumeratedShapes"] = _ints_value(shapes, (len(shapes), len(shapes[0]) if shapes else 0))
    default = a.WhichOneof("defaultOptionalValue")
    if default is not None:
        numpy_type = {"intDefaultValue": np.int32, "floatDefaultValue": np.float32,
                      "doubleDefaultValue": np.float64}[default]
        attrs[default] = Value.tensor(numpy_type(getattr(a, default)))
    attrs.update(extra)
    if not a.shape:
        return TensorType(dtype, (), rank=-1, attributes=attrs)  # `(..., fp32)`: no shape given
    return TensorType(dtype, tuple(a.shape), attributes=attrs)


def _image_args(image) -> dict:
    args = {"width": _int_value(image.width), "height": _int_value(image.height)}
    if image.colorSpace:
        args["colorSpace"] = Value.tensor(COLOR_SPACES.get(image.colorSpace, str(image.colorSpace)))
    flex = image.WhichOneof("SizeFlexibility")
    if flex == "enumeratedSizes":
        sizes = [(s.width, s.height) for s in image.enumeratedSizes.sizes]
        args["enumeratedSizes"] = _ints_value(sizes, (len(sizes), 2))
    elif flex == "imageSizeRange":
        r = image.imageSizeRange
        args["imageSizeRange"] = _ints_value([(r.widthRange.lowerBound, r.widthRange.upperBound),
                                              (r.heightRange.lowerBound, r.heightRange.upperBound)], (2, 2))
    return args


def _int_value(n: int) -> Value:
    return _ints_value(n, ())


def _ints_value(values, shape: tuple) -> Value:
    """Integers as the plainest literal that holds them: int32 when they fit, else int64."""
    array = np.array(values, dtype=np.int64).reshape(shape)
    fits = array.size == 0 or (array.min() >= -2**31 and array.max() < 2**31)
    return Value.tensor(array.astype(np.int32) if fits else array)


def _bytes_value(raw: bytes) -> Value:
    return Value.tensor(np.frombuffer(raw, np.uint8))


def _add_unknown(args: dict, msg, key: str) -> None:
    """Fields of `msg` this schema does not know, as raw bytes under `key`."""
    from ..ir.unknown import unknown_bytes
    raw = unknown_bytes(msg)
    if raw:
        args[key] = _bytes_value(raw)


# ---- text → model -------------------------------------------------------------------------------

def spec_from_section(section: Section, program):
    """The Model message (without its program) that a parsed model section says."""
    try:
        return _spec(section, program)
    except SectionError:
        raise
    except ValueError as e:  # protobuf's: a number its field cannot hold
        raise SectionError(f"a number out of range in the model section: {e}", section.call.loc) from None


def _spec(section: Section, program):
    spec = _schema().Model()
    call = section.call
    args = dict(call.args)
    version = args.pop("specificationVersion", None)
    spec.specificationVersion = (_int(version, call, "specificationVersion") if version is not None
                                 else specification_version(program))
    _merge_unknown(spec, args, "unknownFields", call)
    desc_args = {k: args.pop(k) for k in (*DESCRIPTION_STRINGS, "descriptionUnknownFields") if k in args}
    _no_more(args, call, "the model")
    if section.body is None:
        if desc_args:
            raise SectionError(f"{next(iter(desc_args))}= belongs to the model description: "
                               "add braces after model(...) to give one", call.arg_locs.get(next(iter(desc_args))))
        return spec
    desc = spec.description
    desc.SetInParent()
    for key in DESCRIPTION_STRINGS:
        if key in desc_args:
            setattr(desc, key, _str(desc_args[key], call, key))
    _merge_unknown(desc, desc_args, "descriptionUnknownFields", call)
    for item in section.body:
        if isinstance(item, Feature):
            _add_feature(desc, item, TOP_KINDS)
        elif item.call.name in ("metadata", "userDefined") and item.body is None:
            _metadata(desc.metadata, item.call)
        elif item.call.name == "function":
            _function(desc.functions.add(), item)
        else:
            raise SectionError(f"unknown part of a model description: {item.call.name}(...) "
                               "(expected input, output, state, trainingInput, metadata, userDefined "
                               "or function)", item.call.loc)
    return spec


def _add_feature(msg, item: Feature, kinds: tuple) -> None:
    if item.kind not in kinds:
        raise SectionError(f"unknown kind of feature {item.kind!r} (expected {', '.join(kinds)})", item.loc)
    feature = getattr(msg, item.kind).add()
    feature.name = item.name
    try:
        _fill_feature(feature, item.type, item.loc)
    except SectionError as e:
        e.loc = e.loc or item.loc
        raise
    except ValueError as e:  # protobuf's: a number its field cannot hold
        raise SectionError(f"a number out of range for this feature: {e}", item.loc) from None


def _fill_feature(feature, t, loc=None) -> None:
    """Fill a FeatureDescription (its name already set) from a readable type."""
    ft = feature.type
    ft.SetInParent()
    if isinstance(t, Call):
        args = dict(t.args)
        if t.name == "encoded":
            raw = _bytes(args.pop("data", None), t, "data")
            _no_more(args, t, "encoded(...)")
            name = feature.name
            feature.Clear()
            feature.MergeFromString(raw)
            feature.name = name
            return
        _feature_extras(feature, args, t)
        if t.name == "image":
            _image(ft.imageType, args, t)
        elif t.name == "dictionary":
            key = _str(args.pop("keyType", None), t, "keyType")
            if key not in KEY_TYPES:
                raise SectionError(f"keyType is {key!r}: a dictionary's keys are \"string\" or \"int64\"",
                                   t.arg_locs.get("keyType"))
            getattr(ft.dictionaryType, KEY_TYPES[key]).SetInParent()
        elif t.name == "sequence":
            element = _str(args.pop("elementType", None), t, "elementType")
            if element not in ("int64", "string"):
                raise SectionError(f"elementType is {element!r}: a sequence holds \"string\" or \"int64\"",
                                   t.arg_locs.get("elementType"))
            getattr(ft.sequenceType, SCALAR_KINDS[element]).SetInParent()
            if "sizeRange" in args:
                (low, high), = _rows(args.pop("sizeRange"), t, "sizeRange", 2, flat=True)
                _size_range(ft.sequenceType.sizeRange, low, high)
        else:
            raise SectionError(f"unknown feature type {t.name}(...) (expected a type such as "
                               "(1, 3, fp32), image(...), dictionary(...), sequence(...) or encoded(...))", t.loc)
        _no_more(args, t, f"{t.name}(...)")
        return
    state = isinstance(t, StateType)
    tensor = t.wrapped if state else t
    if not isinstance(tensor, TensorType):
        raise SectionError("a feature's type is a tensor type such as (1, 3, fp32), a state such as "
                           "(2, 3, fp16)(State), or image(...), dictionary(...), sequence(...)", loc)
    args = dict(tensor.attributes)
    where = Call("the type", args, loc)
    _feature_extras(feature, args, where)
    if not state and not tensor.shape and tensor.rank is None and tensor.dtype in SCALAR_KINDS:
        getattr(ft, SCALAR_KINDS[tensor.dtype]).SetInParent()
    else:
        _array(ft.stateType.arrayType if state else ft.multiArrayType, tensor, args, where)
    _no_more(args, where, "a feature's type")


def _feature_extras(feature, args: dict, where: Call) -> None:
    if "shortDescription" in args:
        feature.shortDescription = _str(args.pop("shortDescription"), where, "shortDescription")
    if "isOptional" in args:
        feature.type.isOptional = _bool(args.pop("isOptional"), where, "isOptional")


def _array(a, tensor: TensorType, args: dict, where: Call) -> None:
    code = ARRAY_CODES.get(tensor.dtype)
    if code is None:
        raise SectionError(f"a model's arrays are {', '.join(ARRAY_CODES)}, not {tensor.dtype}", where.loc)
    a.dataType = code
    if tensor.rank == -1 and not tensor.shape:
        pass  # (..., fp32): an array whose shape the model does not give
    elif tensor.rank is not None or not tensor.shape or not all(type(d) is int for d in tensor.shape):
        raise SectionError("a feature's shape is a list of sizes, such as (1, 3, 224, 224, fp32), or (..., fp32) "
                           "for no shape; flexible sizes go in [shapeRange=[[low, high], ...]] or "
                           "[enumeratedShapes=[[...], ...]]", where.loc)
    else:
        a.shape.extend(tensor.shape)
    if "shapeRange" in args:
        a.shapeRange.SetInParent()
        for low, high in _rows(args.pop("shapeRange"), where, "shapeRange", 2):
            _size_range(a.shapeRange.sizeRanges.add(), low, high)
    if "enumeratedShapes" in args:
        if a.HasField("shapeRange"):
            raise SectionError("an array has shapeRange or enumeratedShapes, not both", where.arg_locs.get("enumeratedShapes"))
        a.enumeratedShapes.SetInParent()
        for shape in _rows(args.pop("enumeratedShapes"), where, "enumeratedShapes", None):
            a.enumeratedShapes.shapes.add().shape.extend(shape)
    defaults = [k for k in ("intDefaultValue", "floatDefaultValue", "doubleDefaultValue") if k in args]
    if len(defaults) > 1:
        raise SectionError("an array has one default value", where.arg_locs.get(defaults[1]))
    if defaults:
        key = defaults[0]
        value = args.pop(key)
        setattr(a, key, _int(value, where, key) if key == "intDefaultValue" else _float(value, where, key))


def _image(image, args: dict, call: Call) -> None:
    image.width = _int(args.pop("width", None), call, "width")
    image.height = _int(args.pop("height", None), call, "height")
    if "colorSpace" in args:
        value = args.pop("colorSpace")
        names = {v: k for k, v in COLOR_SPACES.items()}
        text = _str(value, call, "colorSpace")
        if text not in names and not text.isdigit():
            raise SectionError(f"colorSpace is {text!r}; expected one of {', '.join(names)}", call.arg_locs.get("colorSpace"))
        image.colorSpace = names.get(text) or int(text)
    if "enumeratedSizes" in args:
        image.enumeratedSizes.SetInParent()
        for width, height in _rows(args.pop("enumeratedSizes"), call, "enumeratedSizes", 2):
            size = image.enumeratedSizes.sizes.add()
            size.width, size.height = width, height
    if "imageSizeRange" in args:
        if image.HasField("enumeratedSizes"):
            raise SectionError("an image has enumeratedSizes or imageSizeRange, not both", call.arg_locs.get("imageSizeRange"))
        width, height = _rows(args.pop("imageSizeRange"), call, "imageSizeRange", 2, count=2)
        _size_range(image.imageSizeRange.widthRange, *width)
        _size_range(image.imageSizeRange.heightRange, *height)


def _size_range(r, low: int, high: int) -> None:
    if low < 0:
        raise SectionError(f"a lower bound is 0 or more, not {low}")
    r.SetInParent()  # present even when both bounds are 0
    r.lowerBound, r.upperBound = low, high


def _metadata(meta, call: Call) -> None:
    meta.SetInParent()
    args = dict(call.args)
    if call.name == "userDefined":
        for key, value in args.items():
            meta.userDefined[key] = _str(value, call, key)
        return
    for key in METADATA_STRINGS:
        if key in args:
            setattr(meta, key, _str(args.pop(key), call, key))
    _merge_unknown(meta, args, "unknownFields", call)
    _no_more(args, call, "metadata(...)")


def _function(fn, section: Section) -> None:
    call = section.call
    args = dict(call.args)
    fn.name = _str(args.pop("name", None), call, "name")
    for key in ("predictedFeatureName", "predictedProbabilitiesName"):
        if key in args:
            setattr(fn, key, _str(args.pop(key), call, key))
    _merge_unknown(fn, args, "unknownFields", call)
    _no_more(args, call, "function(...)")
    for item in section.body or []:
        if not isinstance(item, Feature):
            raise SectionError("a function description holds input, output and state features", item.call.loc)
        _add_feature(fn, item, FUNCTION_KINDS)


def _merge_unknown(msg, args: dict, key: str, call: Call) -> None:
    if key in args:
        msg.MergeFromString(_bytes(args.pop(key), call, key))


# ---- reading values -----------------------------------------------------------------------------

def _no_more(args: dict, call: Call, what: str) -> None:
    if args:
        key = next(iter(args))
        raise SectionError(f"{what} has no field {key!r}", call.arg_locs.get(key, call.loc))


def _scalar(value, call: Call, key: str, kinds: tuple, noun: str):
    if value is None:
        raise SectionError(f"{call.name}(...) needs {key}=", call.loc)
    t = value.type
    if not (isinstance(t, TensorType) and t.shape == () and t.rank is None and _kind(t) in kinds):
        raise SectionError(f"{key}= takes {noun}", call.arg_locs.get(key, call.loc))
    return value.array.reshape(()).item()


def _kind(t: TensorType) -> str:
    return by_name(t.dtype).kind


def _int(value, call, key) -> int:
    return int(_scalar(value, call, key, ("int", "uint"), "an integer"))


def _float(value, call, key) -> float:
    return float(_scalar(value, call, key, ("int", "uint", "float"), "a number"))


def _bool(value, call, key) -> bool:
    return bool(_scalar(value, call, key, ("bool",), "True or False"))


def _str(value, call, key) -> str:
    return str(_scalar(value, call, key, ("string",), "a string"))


def _bytes(value, call, key) -> bytes:
    t = getattr(value, "type", None)
    if not (isinstance(t, TensorType) and t.dtype == "uint8" and len(t.shape) == 1):
        raise SectionError(f"{key}= takes bytes, such as uint8([8, 1])", call.arg_locs.get(key, call.loc))
    return value.array.tobytes()


def _rows(value, call, key, width, count=None, flat=False) -> list:
    """The rows of an integer matrix (or, `flat`, one row), checked for `width` columns."""
    t = getattr(value, "type", None)
    ok = isinstance(t, TensorType) and t.rank is None and _kind(t) in ("int", "uint")
    array = value.array if ok else None
    if ok and flat:
        array = array.reshape(1, -1) if array.ndim == 1 else None
    if array is None or array.ndim != 2 or (width is not None and array.shape[1] != width and array.size) \
            or (count is not None and array.shape[0] != count):
        shape = "[low, high]" if flat else "[[a, b], ...]"
        raise SectionError(f"{key}= takes a list of integers such as {shape}", call.arg_locs.get(key, call.loc))
    return [tuple(int(x) for x in row) for row in array.tolist()]


def _schema():
    from ..proto import schema
    return schema


def located_error(e: SectionError, filename, text: str) -> ParseError:
    from ..text.mil.parser import source_line
    line, column = e.loc or (1, 1)
    return ParseError(e.message, line, column, filename, source_line(text, line), text=text)
