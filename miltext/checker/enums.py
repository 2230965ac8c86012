"""The strings an op's string inputs may hold, as coremltools' op definitions state them (its
type inference refuses any other), and the dtype names people write for MIL's."""
from __future__ import annotations

from ..text.lexicon import DTYPE_NAMES

_PAD_TYPES = ("valid", "same", "custom", "same_lower")
_SAMPLING = ("STRICT_ALIGN_CORNERS", "ALIGN_CORNERS", "UNALIGN_CORNERS", "DEFAULT", "OFFSET_CORNERS")
_RNN_ACTIVATIONS = ("tanh", "scaled_tanh", "sigmoid", "hard_sigmoid", "relu", "linear")
_SCATTER = ("update", "add", "sub", "mul", "div", "max", "min")

# (op, input) -> allowed strings; an op type of "*" stands for every op with that input.
ALLOWED = {
    ("*", "pad_type"): _PAD_TYPES,
    ("pad", "mode"): ("constant", "reflect", "replicate"),
    ("gelu", "mode"): ("EXACT", "TANH_APPROXIMATION", "SIGMOID_APPROXIMATION"),
    ("scatter", "mode"): _SCATTER,
    ("scatter_along_axis", "mode"): _SCATTER,
    ("scatter_nd", "mode"): _SCATTER,
    ("random_categorical", "mode"): ("logits", "probs"),
    ("resize_bilinear", "sampling_mode"): _SAMPLING,
    ("crop_resize", "sampling_mode"): _SAMPLING,
    ("crop_resize", "box_coordinate_mode"): ("CORNERS_HEIGHT_FIRST", "CORNERS_WIDTH_FIRST",
                                             "CENTER_SIZE_HEIGHT_FIRST", "CENTER_SIZE_WIDTH_FIRST"),
    ("resize", "interpolation_mode"): ("LINEAR", "NEAREST_NEIGHBOR"),
    ("lstm", "direction"): ("forward", "reverse", "bidirectional"),
    ("gru", "direction"): ("forward", "reverse", "bidirectional"),
    ("rnn", "direction"): ("forward", "reverse", "bidirectional"),
    ("lstm", "activation"): _RNN_ACTIVATIONS,
    ("lstm", "cell_activation"): _RNN_ACTIVATIONS,
    ("lstm", "recurrent_activation"): _RNN_ACTIVATIONS,
    ("gru", "activation"): _RNN_ACTIVATIONS,
    ("gru", "recurrent_activation"): _RNN_ACTIVATIONS,
    ("rnn", "activation"): _RNN_ACTIVATIONS,
    ("quantize", "output_dtype"): ("int8", "uint8"),
}

# cast's dtype: coremltools' cast.supported_dtypes() in each opset
_CAST_IOS15 = ("fp16", "fp32", "int32", "bool")
_CAST_IOS17 = ("fp16", "fp32", "int8", "uint8", "int16", "uint16", "int32", "bool")
CAST_DTYPES = {"CoreML3": _CAST_IOS15, "CoreML4": _CAST_IOS15, "CoreML5": _CAST_IOS15, "CoreML6": _CAST_IOS15}

# dtype names other libraries use, for "did you mean"
DTYPE_ALIASES = {"float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
                 "single": "fp32", "float64": "fp64", "double": "fp64", "bfloat16": "bf16",
                 "int": "int32", "long": "int64", "boolean": "bool", "str": "string",
                 "short": "int16", "byte": "int8", "uint": "uint32"}


def allowed(op_type: str, key: str, opset: str):
    """The strings input `key` of `op_type` may hold in `opset`, or None when any will do."""
    if (op_type, key) == ("cast", "dtype"):
        return CAST_DTYPES.get(opset, _CAST_IOS17)
    found = ALLOWED.get((op_type, key)) or ALLOWED.get(("*", key))
    if found is None and key.endswith("dtype"):    # any other dtype input names a MIL dtype
        found = DTYPE_NAMES
    return found

