"""Generate miltext's table of MIL ops from coremltools' own op registry.

What it does
------------
Imports coremltools, walks its op registry (``SSAOpRegistry``) and writes a
JSON table describing, for every ML-program opset from CoreML5 (iOS15)
onwards, which op types exist and which parameters each op takes.  Nothing in
the table is written by hand: op availability, parameter names, kinds,
constness, optionality, dtypes and defaults all come from the installed
coremltools at run time.

How to run
----------
    python scripts/gen_op_table.py [-o miltext/data/ops.json]

Needs coremltools installed (developed against coremltools 9.0).  The output
is deterministic: running the script twice gives byte-identical files.

Output format
-------------
Top level keys:

* ``generated_by``, ``coremltools_version``
* ``opsets``: MIL opset string -> coremltools target name,
  e.g. ``"CoreML7": "iOS17"``.
* ``ops``: op type -> list of variants.  A variant is one op class and has
  ``opsets`` (opsets in which coremltools resolves the op type to that class),
  ``defined_in`` (target the class was registered for), ``inputs`` (in the
  class's ``input_spec`` declaration order) and ``attribute_params``.
* ``pymil_only``: op types that only exist inside pymil and are never written
  to a model as such.  ``coreml_update_state`` is the only one of those listed
  in ``ops``; its variant carries ``"pymil_only": true`` and ``lowered_to``
  (the proto ops the serializer writes instead).
* ``ops_count``: opset -> number of serializable op types available.

Ops the proto has that the registry lacks: ``write_state`` exists only in the
serializer (``load.py`` lowers ``coreml_update_state(state, value)`` to
``write_state(input=state, data=value)`` and a ``read_state``).  Its entry is
derived from ``coreml_update_state``'s registry entry with the inputs renamed,
available where ``read_state`` is, and carries ``"lowered_from"``.  Its inputs
are listed in name order: load.py builds them in a dict, and name order is how
miltext printed them before the table knew the op, so canonical text stays put.

Opset resolution: an opset's op types are whatever coremltools' own resolver
(``ops.helper._get_version_of_op``, the function ``mb.<op>`` uses) picks for
that target.  Targets newer than the registry's newest opset inherit the
newest registered class, exactly as that resolver does.

Input fields:

* ``name``: key in the proto ``Operation.inputs`` (or ``attributes``) map.
  Parameters whose name starts with ``_`` are skipped, as the serializer
  (``backend/mil/load.py``) skips them.
* ``optional``, ``const``: the flags of the coremltools input type.
* ``kind``: from the coremltools input type class:

  ======================================  =================
  coremltools class                       kind
  ======================================  =================
  TensorInputType                         tensor
  ListInputType                           list
  TupleInputType                          tuple
  StateInputType                          state
  ListOrTensorOrDictInputType             list_or_tensor
  InternalInputType                       internal
  PyFunctionInputType                     py_function
  anything else                           snake_case of the class name
                                          without ``InputType``
  ======================================  =================

  coremltools does not distinguish scalars from tensors (TensorInputType
  accepts both), so there is no separate scalar kind.  ``internal`` only
  survives for ``const``'s ``val`` (the other internal params start with
  ``_``).
* ``dtypes``: allowed element dtypes of a TensorInputType (a ``type_domain``
  id such as ``"T"`` is resolved through the class's ``type_domains``), in a
  fixed canonical order; ``null`` for other kinds.
* ``domain``: the name of the input's type domain (``"T"``), present only when the input
  has one: the inputs of an op that name one domain must share one dtype.
* ``default``: value the builder fills in when the input is omitted, taken
  from the class's ``default_inputs()``.  That method needs an op instance, so
  it is called on bare instances whose required inputs are stand-ins with
  only a rank, shape and dtype, once with two deliberately different
  stand-ins.  A default is recorded only when both calls give the same plain
  JSON value (number, bool, string, list of those); defaults that depend on
  the inputs (conv ``strides``, dtype-typed epsilons, ...), defaults of
  ``None`` and classes whose ``default_inputs()`` fails give ``null``.

``attribute_params`` mirrors the rule in coremltools'
``backend/mil/load.py``: ``const`` always writes ``val`` as an attribute, and
a ``constexpr_*`` op class whose own opset version (the first target it is
registered for, i.e. ``Operation.opset_version``) is iOS17 or older writes all
its parameters as attributes.  Newer ``constexpr_*`` classes (iOS18) write
them as inputs.  The rule depends on the op class, not on the program's
opset, so an iOS16 constexpr class stays attribute-style in CoreML8/9.
"""

import argparse
import json
import math
import os
import re
import sys

import coremltools as ct
import coremltools.converters.mil.mil.ops.defs  # noqa: F401  (registers all ops)
import numpy as np
from coremltools.converters.mil._deployment_compatibility import AvailableTarget
from coremltools.converters.mil.mil import types
from coremltools.converters.mil.mil.input_type import TensorInputType
from coremltools.converters.mil.mil.ops.helper import _get_version_of_op
from coremltools.converters.mil.mil.ops.registry import SSAOpRegistry

GENERATED_BY = "scripts/gen_op_table.py"
DEFAULT_OUTPUT = os.path.join("miltext", "data", "ops.json")
# MIL opsets start at iOS13 (CoreML3): ML programs need iOS15, but coremltools prints and
# checks programs of the older MIL opsets too (`main[CoreML3]`).
FIRST_ML_PROGRAM_TARGET = AvailableTarget.iOS13

# Canonical spelling and order of element dtypes in the table.
DTYPE_ORDER = (
    "bool", "string",
    "fp16", "fp32", "fp64", "bf16",
    "int4", "int8", "int16", "int32", "int64",
    "uint1", "uint2", "uint3", "uint4", "uint6",
    "uint8", "uint16", "uint32", "uint64",
    "fp8e4m3fn", "fp8e5m2",
)

# Input type class name -> kind, where the derived name is not what we want.
KIND_OVERRIDES = {"ListOrTensorOrDictInputType": "list_or_tensor"}

# Dialect ops that load.py decomposes into proto ops while serializing.
SERIALIZER_LOWERINGS = {"coreml_update_state": ("write_state", "read_state")}

# Proto ops with no registry entry: op -> (dialect op it comes from, its input renames, the
# registered op whose opsets it shares).
PROTO_ONLY_OPS = {
    "write_state": ("coreml_update_state", {"state": "input", "value": "data"}, "read_state"),
}

# Op classes that, per load.py, write every parameter as an attribute.
ATTRIBUTE_STYLE_OPS = ("const",)
CONSTEXPR_PREFIX = "constexpr_"
LAST_ATTRIBUTE_STYLE_CONSTEXPR_TARGET = AvailableTarget.iOS17


# --------------------------------------------------------------------------
# Opsets
# --------------------------------------------------------------------------

def ml_program_opsets():
    """Return [(opset string, target)] for every ML-program target, oldest first."""
    opset_names = ct._OPSET  # spec version -> "CoreML<n>"
    result = []
    for target in sorted(AvailableTarget, key=lambda t: t.value):
        if target.value >= FIRST_ML_PROGRAM_TARGET.value and target.value in opset_names:
            result.append((opset_names[target.value], target))
    return result


def resolve_op_class(variants, target):
    """Return the class coremltools uses for an op at `target`, or None."""
    try:
        return _get_version_of_op(variants, target)
    except ValueError:
        return None


def registered_target(op_cls, variants):
    """Return the oldest target for which `op_cls` is registered."""
    return min(t for t, cls in variants.items() if cls is op_cls)


# --------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------

def input_kind(input_type):
    """Short lower-case name of a coremltools input type class."""
    class_name = type(input_type).__name__
    if class_name in KIND_OVERRIDES:
        return KIND_OVERRIDES[class_name]
    stem = class_name[: -len("InputType")] if class_name.endswith("InputType") else class_name
    return re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower()


def dtype_name(builtin_type):
    """Spell a coremltools builtin type with the table's dtype names."""
    name = types.builtin_to_string(builtin_type)
    return {"str": "string"}.get(name, name)


def sort_dtypes(names):
    """Order dtype names canonically; unknown names go last, alphabetically."""
    def key(name):
        return (DTYPE_ORDER.index(name), "") if name in DTYPE_ORDER else (len(DTYPE_ORDER), name)
    return sorted(set(names), key=key)


def input_dtypes(op_cls, input_type):
    """Allowed element dtypes of a tensor input, or None."""
    if not isinstance(input_type, TensorInputType):
        return None
    if input_type.type_domain_id is not None:
        domain = op_cls.type_domains.get(input_type.type_domain_id)
    else:
        domain = input_type.type_domain
    if not domain:
        return None
    return sort_dtypes(dtype_name(t) for t in domain)


def is_serialized_param(name):
    """load.py never writes parameters whose name starts with '_'."""
    return not name.startswith("_")


# --------------------------------------------------------------------------
# Defaults
# --------------------------------------------------------------------------

class _Undecidable(Exception):
    """A default depends on a decision about an unknown input."""


class _Unknown:
    """Placeholder for anything unknown while probing default_inputs().

    Attribute access, calls, indexing and arithmetic yield the placeholder
    again, so values derived from it can be recognised; anything that needs a
    concrete answer (truth value, iteration, length) raises _Undecidable.
    """

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args, **kwargs):
        return self

    def __getitem__(self, key):
        return self

    def __bool__(self):
        raise _Undecidable()

    def __iter__(self):
        raise _Undecidable()

    def __len__(self):
        raise _Undecidable()

    __hash__ = object.__hash__


def _absorb(self, *args):
    return self


for _dunder in (
    "add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod "
    "pow rpow neg pos abs lt le gt ge eq ne"
).split():
    setattr(_Unknown, "__%s__" % _dunder, _absorb)

UNKNOWN = _Unknown()


class _StandIn:
    """Stand-in for a required input Var: concrete rank, shape and dtype only.

    Everything else about it (e.g. its value) is UNKNOWN.
    """

    def __init__(self, rank, dim, dtype):
        self.rank = rank
        self.shape = (dim,) * rank
        self.dtype = dtype

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return UNKNOWN


# Two deliberately different stand-ins: a default that comes out the same for
# both does not depend on the required inputs.
STAND_INS = (
    dict(rank=3, dim=2, dtype=types.fp16),
    dict(rank=4, dim=3, dtype=types.fp32),
)


def probe_instance(op_cls, stand_in):
    """A bare op instance with stand-in required inputs, absent optional ones."""
    instance = op_cls.__new__(op_cls)
    for name, input_type in op_cls.input_spec.input_types.items():
        setattr(instance, name, None if input_type.optional else _StandIn(**stand_in))
    return instance


def probe_defaults(op_cls, stand_in):
    """default_inputs() of one probe instance as a dict, or None if it fails."""
    try:
        return dict(op_cls.default_inputs(probe_instance(op_cls, stand_in)).items())
    except Exception:  # any failure just means "no known defaults"
        return None


def input_independent_defaults(op_cls):
    """name -> JSON default, for the defaults every probe agrees on."""
    probes = [probe_defaults(op_cls, stand_in) for stand_in in STAND_INS]
    if any(p is None for p in probes):
        return {}
    agreed = {}
    for name in probes[0]:
        values = [_json_or_missing(p.get(name)) for p in probes]
        if any(v is _MISSING for v in values) or values[0] is None:
            continue
        if len({json.dumps(v, sort_keys=True) for v in values}) == 1:
            agreed[name] = values[0]
    return agreed


_MISSING = object()  # marks a default that is not a plain JSON value


def _json_or_missing(value):
    """json_value(value), or _MISSING when it has no plain JSON form."""
    try:
        return json_value(value)
    except ValueError:
        return _MISSING


def json_value(value):
    """Convert a default to a plain JSON value; raise ValueError if impossible."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.ndarray):
        return json_value(value.tolist())
    if isinstance(value, np.generic):
        return json_value(_numpy_scalar(value))
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("non-finite float")
        return value
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    raise ValueError("not a plain value: %r" % type(value))


def _numpy_scalar(value):
    """Python value of a numpy scalar; floats keep their shortest own repr."""
    if isinstance(value, np.floating):
        return float(str(value))
    return value.item()


def default_for(defaults, name):
    """JSON default of one input, or None."""
    return defaults.get(name)


# --------------------------------------------------------------------------
# Variants
# --------------------------------------------------------------------------

def writes_params_as_attributes(op_type, op_cls, variants):
    """True when load.py serializes this op class's params as attributes."""
    if op_type in ATTRIBUTE_STYLE_OPS:
        return True
    if not op_type.startswith(CONSTEXPR_PREFIX):
        return False
    return registered_target(op_cls, variants) <= LAST_ATTRIBUTE_STYLE_CONSTEXPR_TARGET


def describe_inputs(op_cls):
    """The serialized parameters of an op class, in declaration order."""
    defaults = input_independent_defaults(op_cls)
    inputs = []
    for name, input_type in op_cls.input_spec.input_types.items():
        if not is_serialized_param(name):
            continue
        inputs.append({
            "name": name,
            "optional": bool(input_type.optional),
            "kind": input_kind(input_type),
            "const": bool(input_type.const),
            "dtypes": input_dtypes(op_cls, input_type),
            "default": default_for(defaults, name),
        })
        if isinstance(input_type, TensorInputType) and input_type.type_domain_id is not None:
            inputs[-1]["domain"] = input_type.type_domain_id  # inputs of one domain share a dtype
    return inputs


def describe_variant(op_type, op_cls, variants, opsets):
    """One entry of an op's variant list."""
    return {
        "opsets": opsets,
        "defined_in": registered_target(op_cls, variants).name,
        "inputs": describe_inputs(op_cls),
        "attribute_params": writes_params_as_attributes(op_type, op_cls, variants),
    }


def group_by_class(variants, opsets):
    """[(op class, [opset names])] in opset order, for the opsets resolving the op."""
    groups = []
    for opset_name, target in opsets:
        op_cls = resolve_op_class(variants, target)
        if op_cls is None:
            continue
        if groups and groups[-1][0] is op_cls:
            groups[-1][1].append(opset_name)
        else:
            groups.append((op_cls, [opset_name]))
    return groups


def is_public_core_op(op_type):
    """Core ops whose name starts with '_' are pymil internals."""
    return not op_type.startswith("_")


def core_op_table(opsets):
    """op type -> variant list, for the serializable core ops."""
    table = {}
    for op_type, variants in SSAOpRegistry.core_ops.items():
        if not is_public_core_op(op_type):
            continue
        groups = group_by_class(variants, opsets)
        if groups:
            table[op_type] = [
                describe_variant(op_type, cls, variants, names) for cls, names in groups
            ]
    return table


def lowered_op_entry(op_type, lowered_to, table):
    """Variant list for a dialect op that load.py rewrites into proto ops.

    It is available in the opsets where all of those ops that the registry
    knows are available (``write_state`` has no registry entry).
    """
    op_cls = SSAOpRegistry.dialect_ops[op_type]
    available = None
    for target_op in lowered_to:
        if target_op not in table:
            continue
        target_opsets = {o for v in table.get(target_op, []) for o in v["opsets"]}
        available = target_opsets if available is None else available & target_opsets
    variant = {
        "opsets": sorted(available or (), key=_opset_number),
        "defined_in": None,
        "inputs": describe_inputs(op_cls),
        "attribute_params": False,
        "pymil_only": True,
        "lowered_to": list(lowered_to),
    }
    return [variant]


def proto_only_entry(source_op, renames, like_op, table):
    """Variant list for a proto op the registry lacks, from the dialect op it is lowered from."""
    inputs = [dict(spec, name=renames[spec["name"]])
              for spec in describe_inputs(SSAOpRegistry.dialect_ops[source_op])]
    like = table[like_op][0]
    variant = {
        "opsets": list(like["opsets"]),
        "defined_in": like["defined_in"],
        "inputs": sorted(inputs, key=lambda spec: spec["name"]),
        "attribute_params": False,
        "lowered_from": source_op,
    }
    return [variant]


def _opset_number(opset_name):
    return int(re.sub(r"\D", "", opset_name))


def pymil_only_ops():
    """Op types that exist only inside pymil: dialect ops and '_'-prefixed core ops."""
    names = set(SSAOpRegistry.dialect_ops)
    names.update(t for t in SSAOpRegistry.core_ops if not is_public_core_op(t))
    return sorted(names)


def count_ops(table, opsets):
    """opset -> number of serializable op types available in it."""
    counts = {name: 0 for name, _ in opsets}
    for variants in table.values():
        for variant in variants:
            if variant.get("pymil_only"):
                continue
            for name in variant["opsets"]:
                counts[name] += 1
    return counts


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------

def build_table():
    """The whole JSON document as a dict."""
    opsets = ml_program_opsets()
    table = core_op_table(opsets)
    for op_type, lowered_to in SERIALIZER_LOWERINGS.items():
        if op_type in SSAOpRegistry.dialect_ops:
            table[op_type] = lowered_op_entry(op_type, lowered_to, table)
    for op_type, (source_op, renames, like_op) in PROTO_ONLY_OPS.items():
        if source_op in SSAOpRegistry.dialect_ops and like_op in table:
            table[op_type] = proto_only_entry(source_op, renames, like_op, table)
    return {
        "generated_by": GENERATED_BY,
        "coremltools_version": ct.__version__,
        "opsets": {name: target.name for name, target in opsets},
        "ops": table,
        "pymil_only": pymil_only_ops(),
        "ops_count": count_ops(table, opsets),
    }


def write_json(document, path):
    """Write `document` deterministically (sorted keys, fixed indentation)."""
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    text = json.dumps(document, sort_keys=True, indent=1, ensure_ascii=True) + "\n"
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("-o", "--output", default=DEFAULT_OUTPUT,
                        help="output JSON path (default: %(default)s)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    document = build_table()
    write_json(document, args.output)
    counts = ", ".join("%s=%d" % kv for kv in sorted(document["ops_count"].items()))
    print("wrote %s (%s)" % (args.output, counts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
