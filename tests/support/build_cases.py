"""Hand-written models that an unverified `build` wrote as packages Core ML refuses, each in
the shorthand and in its fully typed form, with the line of the mistake.

Before `build` verified, each became an .mlpackage that coremltools refused, in its words:
`Mismatch between var types`, `op reluu not registered`, `Required input alpha is missing`,
`No available version ... iOS17`, `Size of the bias ... does not match`. tests/test_build_verifies.py
asserts that `build` now refuses each with located diagnostics, exactly `check`'s.
"""

HEAD = "main[CoreML7](%x: (1, 2, fp32)) {\n  block0() {\n"
TAIL = "  } -> (%y)\n}\n"

# name -> (the ops of block0, the line of the mistake); the first op is on line 3 (after a
# model section, for those in SECTIONS, of its own lines).
BROKEN = {
    # a (1, 2) tensor added to a 3-element literal: the shapes do not broadcast
    "add_literal": ('    %y = add(x=%x, y=[1.0, 2.0, 3.0])\n', 3),
    "add_literal_typed": ('    %k: (3, fp32) = const(val=(3, fp32)([1.0, 2.0, 3.0]), name="k")\n'
                          '    %y: (1, 3, fp32) = add(x=%x, y=%k, name="y")\n', 4),
    # a dtype in numpy's words, not MIL's
    "cast_float16": ('    %y = cast(x=%x, dtype="float16")\n', 3),
    "cast_float16_typed": ('    %d: (string) = const(val="float16", name="d")\n'
                           '    %y: (1, 2, fp16) = cast(x=%x, dtype=%d, name="y")\n', 4),
    # fp16 added to fp32 (Mismatch between var types)
    "mixed_dtypes": ('    %h = cast(x=%x, dtype="fp16")\n    %y = add(x=%h, y=%x)\n', 4),
    "mixed_dtypes_typed": ('    %d: (string) = const(val="fp16", name="d")\n'
                           '    %h: (1, 2, fp16) = cast(x=%x, dtype=%d, name="h")\n'
                           '    %y: (1, 2, fp32) = add(x=%h, y=%x, name="y")\n', 5),
    # a declared output shape that the op does not give
    "wrong_output_shape": ('    %y: (1, 3, fp32) = relu(x=%x)\n', 3),
    "wrong_output_shape_typed": ('    %y: (1, 3, fp32) = relu(x=%x, name="y")\n', 3),
    # a misspelt op (op reluu not registered)
    "misspelt_op": ('    %y = reluu(x=%x)\n', 3),
    "misspelt_op_typed": ('    %y: (1, 2, fp32) = reluu(x=%x, name="y")\n', 3),
    # a required input left out (Required input alpha is missing)
    "missing_input": ('    %y = leaky_relu(x=%x)\n', 3),
    "missing_input_typed": ('    %y: (1, 2, fp32) = leaky_relu(x=%x, name="y")\n', 3),
    # an op of a newer opset (No available version for scaled_dot_product_attention in iOS17)
    "newer_op": ('    %y = scaled_dot_product_attention(query=%x, key=%x, value=%x)\n', 3),
    "newer_op_typed": ('    %y: (1, 2, fp32) = scaled_dot_product_attention(query=%x, key=%x, value=%x, name="y")\n', 3),
    # a bias of another size than the weight's rows (Size of the bias ... does not match)
    "bias_size": ('    %w: (3, 2, fp32) = const(val=(3, 2, fp32)([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), name="w")\n'
                  '    %b: (2, fp32) = const(val=(2, fp32)([1.0, 2.0]), name="b")\n'
                  '    %y = linear(x=%x, weight=%w, bias=%b)\n', 5),
    "bias_size_typed": ('    %w: (3, 2, fp32) = const(val=(3, 2, fp32)([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]), name="w")\n'
                        '    %b: (2, fp32) = const(val=(2, fp32)([1.0, 2.0]), name="b")\n'
                        '    %y: (1, 3, fp32) = linear(x=%x, weight=%w, bias=%b, name="y")\n', 5),
    # a model section that the program contradicts (its input is fp32): the section's line 2
    "model_section": ('    %y = relu(x=%x)\n', 2),
}

SECTIONS = {"model_section": 'model(specificationVersion=8) {\n  input %x: (1, 2, fp16)\n  output %y: (1, 2, fp32)\n}\n\n'}


def text_of(name: str) -> str:
    ops, _ = BROKEN[name]
    return SECTIONS.get(name, "") + HEAD + ops + TAIL


def line_of(name: str) -> int:
    """The line of the mistake in text_of(name)."""
    return BROKEN[name][1]
