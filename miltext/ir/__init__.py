"""miltext's object model: MIL.proto as plain Python objects (see types, values, program)."""
from .program import Block, Function, Operation, Program, Var
from .types import (MISSING, UNSET_DIM, VARIADIC, DictType, ListType, StateType, TensorType,
                    TupleType, UnknownType, ValueType)
from .values import (DEFAULT_WEIGHT_FILE, Blob, DictData, Elided, EmptyImmediate, ListData,
                     TensorData, TupleData, Value, WeightRef)

__all__ = ["Block", "Function", "Operation", "Program", "Var", "MISSING", "UNSET_DIM", "VARIADIC",
           "DictType", "ListType", "StateType", "TensorType", "TupleType", "UnknownType",
           "ValueType", "DEFAULT_WEIGHT_FILE", "Blob", "DictData", "Elided", "EmptyImmediate",
           "ListData", "TensorData", "TupleData", "Value", "WeightRef"]
