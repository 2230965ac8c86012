"""miltext's object model: MIL.proto as plain Python objects (see types, values, program).

Each name is imported from its module when first used (PEP 562): printing a type or a value
(the model section of `miltext textconv`, which git runs once per file) needs types and values,
not the program classes."""
_MODULES = {"Block": "program", "Function": "program", "Operation": "program", "Program": "program",
            "Var": "program", "MISSING": "types", "UNSET_DIM": "types", "VARIADIC": "types",
            "DictType": "types", "ListType": "types", "StateType": "types", "TensorType": "types",
            "TupleType": "types", "UnknownType": "types", "ValueType": "types",
            "DEFAULT_WEIGHT_FILE": "values", "Blob": "values", "DictData": "values", "Elided": "values",
            "EmptyImmediate": "values", "ListData": "values", "TensorData": "values", "TupleData": "values",
            "Value": "values", "WeightRef": "values"}

__all__ = list(_MODULES)


def __getattr__(name: str):
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib
    value = globals()[name] = getattr(importlib.import_module(f".{module}", __name__), name)
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(_MODULES))
