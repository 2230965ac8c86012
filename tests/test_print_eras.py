"""coremltools' print(prog) as every release wrote it reads, each spelling as what it means.

What the releases print (read from their source: type_mapping.py, var.py, operation.py and
block.py of coremltools 4.0, 4.1, 5.2, 6.3, 7.2 and 9):
- dtype names: 4.x writes i8 i16 i32 i64 u8 u16 u32 u64 fp16 fp32 fp64 bool str; 5.0 on write
  int8 ... uint64, string; 8 on add int4, uint1 ... uint6; a List's element is `int` or `str`;
- a type is str(shape) less its ")" plus the dtype: `(4,i32)` for rank 1 (no space), `(i32)`
  for rank 0, `(1, 3, fp32)`; a type with no dtype name (a dict or tuple in 4.x) is `()`, and
  7 on write `(dict)`;
- after the type `*` (value known) or `^` (symbolic value known), then (Tensor), (Scalar),
  (List) or, from 8 on, (State);
- symbolic dims as sympy writes them: is0, s0, 2*is0, is0 + 1, is0**2, and *is0 (variadic);
- const values (4.x prints const ops): val=[0, 3, 1, 2], val=False, val=1e-45, val="fp16",
  symbolic values val=(s0, s1, 2) or val=[is0 - 1, 2], and val=(file_value) for a value kept
  in a file.
"""
import os

import pytest

import miltext
from miltext.ir import Elided
from support.corpus import CORPUS

WILD = os.path.join(CORPUS, "wild")


def _print(*lines: str) -> str:
    """A coremltools 4-style print (no opset) of one function whose block holds `lines`."""
    body = "".join(f"    {line}\n" for line in lines)
    return f"main(%x: (1, 3, fp32)(Tensor)) {{\n  block0() {{\n{body}  }} -> (%x)\n}}\n"


def _read_line(line: str) -> str:
    """The canonical text of the one op line of a print."""
    text = miltext.dumps(miltext.loads(_print(line), "print.txt"))
    return text.split("\n")[2].strip()


@pytest.mark.parametrize("printed,canonical", [
    # coremltools 4 dtype names, rank 1 without a space, rank 0, markers
    ('%a: (4,i32)*(Tensor) = const(val=[0, 3, 1, 2], name="a")', '%a: (4, int32) = const(val=[0, 3, 1, 2], name="a")'),
    ('%a: (i64)*(Scalar) = const(val=3, name="a")', '%a: (int64) = const(val=3, name="a")'),
    ('%a: (i16)*(Scalar) = const(val=1, name="a")', '%a: (int16) = const(val=1, name="a")'),
    ('%a: (2,i8)*(Tensor) = const(val=[1, 2], name="a")', '%a: (2, int8) = const(val=[1, 2], name="a")'),
    ('%a: (2,u8)(Tensor) = cast(x=%x, name="a")', '%a: (2, uint8) = cast(x=%x, name="a")'),
    ('%a: (2,u16)(Tensor) = cast(x=%x, name="a")', '%a: (2, uint16) = cast(x=%x, name="a")'),
    ('%a: (u32)(Scalar) = cast(x=%x, name="a")', '%a: (uint32) = cast(x=%x, name="a")'),
    ('%a: (2, 3,u64)(Tensor) = cast(x=%x, name="a")', '%a: (2, 3, uint64) = cast(x=%x, name="a")'),
    ('%a: (2,fp64)*(Tensor) = const(val=[1.0, 2.0], name="a")', '%a: (2, fp64) = const(val=[1.0, 2.0], name="a")'),
    ('%a: (str)*(Scalar) = const(val="valid", name="a")', '%a: (string) = const(val="valid", name="a")'),
    ('%a: (bool)*(Scalar) = const(val=False, name="a")', '%a: (bool) = const(val=False, name="a")'),
    ('%a: (3,i64)^(Tensor) = shape(x=%x, name="a")', '%a: (3, int64) = shape(x=%x, name="a")'),
    # 5.0 and later
    ('%a: (4,int32)*(Tensor) = const(val=[0, 3, 1, 2], name="a")', '%a: (4, int32) = const(val=[0, 3, 1, 2], name="a")'),
    ('%a: (string)*(Scalar) = const(val="x", name="a")', '%a: (string) = const(val="x", name="a")'),
    ('%a: (4,uint4)(Tensor) = cast(x=%x, name="a")', '%a: (4, uint4) = cast(x=%x, name="a")'),
    # symbolic dims
    ('%a: (is0, 3, fp32)(Tensor) = relu(x=%x, name="a")', '%a: (?, 3, fp32) = relu(x=%x, name="a")'),
    ('%a: (s0,fp32)(Tensor) = relu(x=%x, name="a")', '%a: (?, fp32) = relu(x=%x, name="a")'),
    ('%a: (2*is0, 3, fp32)(Tensor) = relu(x=%x, name="a")', '%a: (?, 3, fp32) = relu(x=%x, name="a")'),
    ('%a: (is0 + 1, 3, fp32)(Tensor) = relu(x=%x, name="a")', '%a: (?, 3, fp32) = relu(x=%x, name="a")'),
    ('%a: (is0 - 1,fp32)(Tensor) = relu(x=%x, name="a")', '%a: (?, fp32) = relu(x=%x, name="a")'),
    ('%a: (is0**2, 3, fp32)(Tensor) = relu(x=%x, name="a")', '%a: (?, 3, fp32) = relu(x=%x, name="a")'),
    ('%a: (*is0, fp32)(Tensor) = relu(x=%x, name="a")', '%a: (*, fp32) = relu(x=%x, name="a")'),
    # lists, dicts and types with no dtype name
    ('%a: List[?, (2,fp32)](List) = make_list(name="a")', '%a: List[?, (2, fp32)] = make_list(name="a")'),
    ('%a: List[?, (i32)](List) = make_list(name="a")', '%a: List[?, (int32)] = make_list(name="a")'),
    ('%a: List[3, int](List) = make_list(name="a")', '%a: List[3, (int64)] = make_list(name="a")'),
    ('%a: List[?, str](List) = make_list(name="a")', '%a: List[?, (string)] = make_list(name="a")'),
    ('%a: List[?, unknown](List) = make_list(name="a")', '%a: List[?, unknown] = make_list(name="a")'),
    ("%a: (dict)(Scalar) = const(val={'k': 1}, name=\"a\")", '%a: Dict[_, _] = const(val={"k": 1}, name="a")'),
    ("%a: ()(Scalar) = const(val={'k': 1}, name=\"a\")", '%a: unknown = const(val={"k": 1}, name="a")'),
    ('%a: ()*(Scalar) = identity(x=%x, name="a")', '%a: unknown = identity(x=%x, name="a")'),
    # values coremltools knew only by symbols, or kept in a file: read as left out
    ('%a: (3,i64)^(Tensor) = const(val=(s0, s1, 2), name="a")', '%a: (3, int64) = const(val=[...], name="a")'),
    ('%a: (3,int32)^(Tensor) = const(val=[s0, s1, 2], name="a")', '%a: (3, int32) = const(val=[...], name="a")'),
    ('%a: (2,i64)^(Tensor) = const(val=[is0 - 1, 2*is1], name="a")', '%a: (2, int64) = const(val=[...], name="a")'),
    ('%a: (2,i64)^(Tensor) = const(val=(is0 + 1, 3), name="a")', '%a: (2, int64) = const(val=[...], name="a")'),
    ('%a: (1, 3, fp32)*(Tensor) = const(val=(file_value), name="a")', '%a: (1, 3, fp32) = const(val=[...], name="a")'),
])
def test_every_spelling_reads_as_what_it_means(printed, canonical):
    assert _read_line(printed) == canonical


def test_a_symbolic_input_value_is_left_out_and_check_says_so():
    program = miltext.loads(_print('%a: (1, 3, fp32)(Tensor) = reshape(x=%x, shape=(s0, 3), name="a")'))
    (op,) = program.functions["main"].block.operations
    (value,) = op.inputs["shape"]
    assert value.type is None and isinstance(value.data, Elided)
    with pytest.raises(miltext.ProgramError, match="left out"):
        program.to_proto()


def test_bare_names_in_canonical_text_are_still_errors():
    """Only a coremltools print may show symbols in a value; in canonical text a bare name
    where a value or a %name belongs is a mistake."""
    text = 'main[CoreML7](%x: (2, fp32)) {\n  block0() {\n    %y: (2, fp32) = add(x=%x, y=(s0, 2), name="y")\n  } -> (%y)\n}\n'
    with pytest.raises(miltext.ParseError) as info:
        miltext.loads(text)
    assert (info.value.line, info.value.message) == (3, "unexpected name s0: expected a value or a %name")


@pytest.mark.parametrize("name", sorted(f for f in os.listdir(WILD) if f.endswith(".pymil.txt")))
def test_every_wild_print_reads(name):
    with open(os.path.join(WILD, name), encoding="utf-8") as f:
        text = f.read()
    program = miltext.loads(text, name)
    ops = program.functions["main"].block.operations
    assert [op.type for op in ops] == ["relu", "const", "transpose", "const", "const", "reduce_mean", "const", "log"]
    perm = ops[1].attributes["val"]
    assert perm.type.dtype == "int32" and perm.array.tolist() == [0, 3, 1, 2]
    assert ops[4].outputs[0].type.dtype == "bool" and ops[4].outputs[0].type.shape == ()
    # what it reads as is a whole program (the print shows its consts): it becomes a proto
    assert miltext.Program.from_proto(program.to_proto().SerializeToString()).functions["main"].block.outputs == ["log"]
