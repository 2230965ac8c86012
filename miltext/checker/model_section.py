"""The model section against the program: each function the section describes has the inputs,
outputs and states it says, of the names, dtypes, ranks and sizes it says, and a size the
program leaves open is one the section lets vary (and the other way round). Core ML refuses a
model whose description and program disagree; here the error is at the section's line, with a
note at the program's."""
from __future__ import annotations

import re

from ..ir import DictType, StateType, TensorType
from ..ir.walk import operations
from .compat import describe
from .context import Context, count, var

RULES = {
    "model-section": "error",   # a model section that says no model, or one the program contradicts
}

_GRAYSCALE_FLOAT16 = 40
_CHANNELS = {10: 1, 20: 3, 30: 3, 40: 1}   # by colorSpace: GRAYSCALE, RGB, BGR, GRAYSCALE_FLOAT16


def check(ctx: Context) -> None:
    section = ctx.section
    if section is None:
        return
    from ..model.section import SectionError, spec_from_section
    head = section.call.loc or _head(ctx)
    try:
        spec = spec_from_section(section, ctx.program)
    except SectionError as e:
        ctx.error("model-section", e.loc or head, e.message)
        return
    if not spec.HasField("description"):
        return
    desc, functions = spec.description, ctx.program.functions
    places = _Places(section)
    if desc.functions:
        for fd in desc.functions:
            fn = functions.get(fd.name)
            loc = places.function(fd.name)
            if fn is None:
                ctx.error("model-section", loc, f"the model section describes function {fd.name!r}, "
                          f"which the program does not have ({_names(functions)})")
            else:
                _Agreement(ctx, places, fd.name, loc).function(fd, fn)
        return
    name = _described_function(desc, functions)
    if name is not None:
        _Agreement(ctx, places, None, head).function(desc, functions[name])


_MODEL = re.compile(r"^([ \t]*)model[ \t]*\(", re.M)


def _head(ctx: Context):
    """Where `model(` is written: the parser keeps no place for the keyword."""
    text = ctx.where.text
    found = _MODEL.search(text) if text is not None else None
    if found is None:
        return None
    return text.count("\n", 0, found.start()) + 1, len(found.group(1)) + 1


def _described_function(desc, functions) -> str | None:
    """The function a description without function descriptions is about."""
    if len(functions) == 1:
        return next(iter(functions))
    default = desc.defaultFunctionName or "main"
    return default if default in functions else None


def _names(functions) -> str:
    return ", ".join(repr(n) for n in functions) or "none"


class _Places:
    """Where each feature of the section is written: (function name or None, kind, name) -> loc."""

    def __init__(self, section):
        from ..text.section_syntax import Feature
        self.features, self.functions = {}, {}
        for item in section.body or ():
            if isinstance(item, Feature):
                self.features[(None, item.kind, item.name)] = item.loc
            elif item.call.name == "function":
                name = item.call.args.get("name")
                name = str(name.array.reshape(()).item()) if name is not None else None
                self.functions[name] = item.call.loc
                for inner in item.body or ():
                    if isinstance(inner, Feature):
                        self.features[(name, inner.kind, inner.name)] = inner.loc

    def function(self, name: str):
        return self.functions.get(name)

    def feature(self, function, kind: str, name: str, default):
        return self.features.get((function, kind, name)) or default


class _Agreement:
    """One function description against one function of the program."""

    def __init__(self, ctx: Context, places: _Places, described, loc):
        self.ctx, self.places, self.described, self.loc = ctx, places, described, loc

    def function(self, fd, fn) -> None:
        name = self._fn_name(fn)
        states = {v.name: v for v in fn.inputs if isinstance(v.type, StateType)}
        inputs = {v.name: v for v in fn.inputs if not isinstance(v.type, StateType)}
        self._features("input", fd.input, inputs, fn, name, self._input)
        self._features("state", fd.state, states, fn, name, self._state)
        block = fn.blocks.get(fn.opset)
        if block is None:
            return
        types = _output_types(fn, block)
        outputs = {n: (types.get(n), self.ctx.where.block_output(block.loc, n) or block.loc)
                   for n in block.outputs}
        for feature in fd.output:
            loc = self.places.feature(self.described, "output", feature.name, self.loc)
            if feature.name not in outputs:
                self._error(loc, f"output {var(feature.name)} is not an output of {name}",
                            block.loc, f"{name} returns {_list(block.outputs)}")
                continue
            self._output(feature, *outputs[feature.name], loc, name)
        described = {f.name for f in fd.output}
        for out in block.outputs:
            if out not in described:
                self._error(self.loc, f"{name} returns {var(out)}, which the model section does not list as an output",
                            outputs[out][1], f"{var(out)} is returned here")

    def _fn_name(self, fn) -> str:
        for name, f in self.ctx.program.functions.items():
            if f is fn:
                return f"function {name!r}" if name != "main" else "main"
        return "the function"

    def _features(self, kind, features, vars_, fn, name, compare) -> None:
        for feature in features:
            loc = self.places.feature(self.described, kind, feature.name, self.loc)
            v = vars_.get(feature.name)
            if v is None:
                self._error(loc, f"{kind} {var(feature.name)} is not {'a state' if kind == 'state' else 'an input'} "
                            f"of {name}", fn.loc, f"{name} takes {_list(vars_) if vars_ else f'no {kind}s'}")
            else:
                compare(feature, v, loc)
        described = {f.name for f in features}
        for v in vars_.values():
            if v.name not in described:
                self._error(self.loc, f"{name} takes {kind} {var(v.name)}, which the model section does not list",
                            v.loc or fn.loc, f"{var(v.name)} is declared here")

    # ---- one feature against one var ----
    def _input(self, feature, v, loc) -> None:
        ft, t = feature.type, v.type
        kind = ft.WhichOneof("Type")
        if kind == "multiArrayType":
            self._array(ft.multiArrayType, t, v, loc, "input")
        elif kind == "imageType":
            self._image(ft.imageType, t, v, loc)

    def _state(self, feature, v, loc) -> None:
        ft = feature.type
        if ft.WhichOneof("Type") == "stateType" and ft.stateType.HasField("arrayType"):
            self._array(ft.stateType.arrayType, v.type.wrapped, v, loc, "state")

    def _output(self, feature, t, where, loc, name) -> None:
        ft = feature.type
        kind = ft.WhichOneof("Type")
        what = f"output {var(feature.name)}"
        if t is None:
            return  # the text leaves it to inference
        if kind == "multiArrayType":
            a = ft.multiArrayType
            if not isinstance(t, TensorType):
                self._error(loc, f"{what} is an array here, but {name} returns {describe(t)}", where, "returned here")
                return
            self._dtype(a.dataType, t, what, loc, where)
            if a.shape and t.rank is None:
                self._shape(list(a.shape), None, t, what, loc, where, open_ok=True)
        elif kind == "dictionaryType" and not isinstance(t, DictType):
            self._error(loc, f"{what} is a dictionary here, but {name} returns {describe(t)}", where, "returned here")
        elif kind in ("stringType", "int64Type"):
            dtype = "string" if kind == "stringType" else "int64"
            if not (isinstance(t, TensorType) and t.dtype == dtype and not t.shape):
                self._error(loc, f"{what} is ({dtype}) here, but {name} returns {describe(t)}", where, "returned here")

    def _array(self, a, t, v, loc, kind) -> None:
        what = f"{kind} {var(v.name)}"
        where = v.loc
        if not isinstance(t, TensorType):
            self._error(loc, f"{what} is an array here, but {describe(v.type)} in the program", where,
                        f"{var(v.name)} is declared here")
            return
        self._dtype(a.dataType, t, what, loc, where)
        if not a.shape or t.rank is not None:
            return
        which = a.WhichOneof("ShapeFlexibility")
        if which == "shapeRange":
            ranges = [(r.lowerBound, r.upperBound) for r in a.shapeRange.sizeRanges]
        elif which == "enumeratedShapes":
            shapes = [list(s.shape) for s in a.enumeratedShapes.shapes]
            ranges = [(min(s[i] for s in shapes), max(s[i] for s in shapes))
                      if shapes and all(len(s) == len(a.shape) for s in shapes) else None
                      for i in range(len(a.shape))]
        else:
            ranges = None
        self._shape(list(a.shape), ranges, t, what, loc, where)

    def _dtype(self, code: int, t: TensorType, what, loc, where) -> None:
        from ..model.derive import ARRAY_DTYPES
        dtype = ARRAY_DTYPES.get(code)
        if dtype is not None and dtype != t.dtype:
            self._error(loc, f"{what} is {dtype} here, but {t.dtype} in the program", where,
                        f"the program's type is {describe(t)}")

    def _shape(self, shape, ranges, t: TensorType, what, loc, where, open_ok=False) -> None:
        """Sizes against dims; `open_ok`: an open dim may have any size (an output's shape in
        a description says what it is at the sizes the model was made for)."""
        note = f"the program's type is {describe(t)}"
        if len(shape) != len(t.shape):
            self._error(loc, f"{what} has rank {len(shape)} here, but {len(t.shape)} in the program", where, note)
            return
        if ranges is not None and len(ranges) != len(shape):
            return  # the section itself is at fault; spec_from_section's business
        for axis, (size, dim) in enumerate(zip(shape, t.shape)):
            low, high = ranges[axis] if ranges is not None and ranges[axis] is not None else (size, size)
            flexible = low != high
            if type(dim) is int:
                if flexible:
                    self._error(loc, f"size {axis} of {what} may vary here ({_range(low, high)}), but the program "
                                f"fixes it at {dim}", where, note)
                elif size != dim:
                    self._error(loc, f"size {axis} of {what} is {size} here, but {dim} in the program", where, note)
            elif not open_ok and ranges is None:   # (a fixed range for an open size is fine)
                self._error(loc, f"size {axis} of {what} is fixed at {size} here, but the program leaves it "
                            "open: give its range ([shapeRange=...]) or fix it in the program", where, note)

    def _image(self, image, t, v, loc) -> None:
        what = f"input {var(v.name)}"
        note = f"the program's type is {describe(t)}"
        if not (isinstance(t, TensorType) and t.rank is None and len(t.shape) == 4):
            self._error(loc, f"{what} is an image here, but {describe(t)} in the program "
                        "(an image input is a (1, channels, height, width) tensor)", v.loc, note)
            return
        want = "fp16" if image.colorSpace == _GRAYSCALE_FLOAT16 else "fp32"
        if t.dtype != want:
            self._error(loc, f"{what} is an image here, so {want} in the program, not {t.dtype}", v.loc, note)
        channels = _CHANNELS.get(image.colorSpace)
        if channels is not None and type(t.shape[1]) is int and t.shape[1] != channels:
            self._error(loc, f"{what} has {count(channels, 'channel')} here, but {t.shape[1]} in the program",
                        v.loc, note)
        flexible = image.HasField("enumeratedSizes") or image.HasField("imageSizeRange")
        for axis, size, word in ((2, image.height, "height"), (3, image.width, "width")):
            dim = t.shape[axis]
            if not flexible and type(dim) is int and dim != size:
                self._error(loc, f"{what} has {word} {size} here, but {dim} in the program", v.loc, note)

    def _error(self, loc, message, note_loc, note_message) -> None:
        self.ctx.error("model-section", loc, message, [self.ctx.note(note_loc, note_message)])


def _output_types(fn, block) -> dict:
    """The type of each var of the function's block, by name; those the text leaves out, as
    inference gives them (so the shorthand is checked as the full form is)."""
    types = {v.name: v.type for v in fn.inputs}
    for op in block.operations:
        for v in op.outputs:
            types[v.name] = v.type
    if any(types.get(name, 0) is None for name in block.outputs):
        types.update(_inferred(fn, block.outputs))
    return types


def _inferred(fn, names) -> dict:
    """Inferred types of the vars `names` of `fn`'s block, the program left as it was."""
    from ..errors import ProgramError
    from ..infer import infer
    from ..ir import Program
    untyped = [v for op in operations(fn) for v in op.outputs if v.type is None]
    try:
        infer(Program({"main": fn}))
    except (ProgramError, RecursionError):
        pass    # what inference cannot type is left unchecked here, and reported elsewhere
    try:
        return {v.name: v.type for op in operations(fn.block) for v in op.outputs if v.name in names}
    finally:
        for v in untyped:
            v.type = None


def _list(names) -> str:
    names = list(names)
    return ", ".join(var(n) for n in names) if names else "nothing"


def _range(low: int, high: int) -> str:
    return f"{low} to {'any size' if high < 0 else high}"
