"""The C fast path (miltext.text.mil._fastprint): serialized Program → text, byte-identical to the
Python printer whenever it answers, None otherwise, and never a crash on any input."""
import glob
import os
import random

import numpy as np
import pytest
from hypothesis import given

import miltext
from miltext import dtypes, packing
from miltext.ir import Block, Function, Operation, Program, TensorType, Value, Var
from miltext.text import lexemes
from miltext.text.mil import fastprint
from miltext.text.mil.printer import print_program
from support.corpus import CORPUS
from support.native import agrees_with_python, require_native
from support.strategies import SETTINGS, programs, value_strategy

_fastprint = require_native("miltext.text.mil._fastprint")
pytestmark = pytest.mark.usefixtures("native_enabled")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python_text(data: bytes):
    """The reference: the Python printer's text, or the exception the Python path raises."""
    try:
        return print_program(Program.from_proto(data))
    except Exception as e:  # noqa: BLE001 - any failure of the Python path is the reference
        return e


def check(data: bytes, must_print: bool = False):
    """C text == Python text whenever C answers; with `must_print`, C must answer."""
    return agrees_with_python(fastprint.program_text, python_text, data, must_print)


def proto_bytes(program) -> bytes:
    return program.to_proto().SerializeToString(deterministic=True)


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# ---- real programs -----------------------------------------------------------------------------

CORPUS_PB = sorted(glob.glob(os.path.join(CORPUS, "**", "*.pb"), recursive=True))
COREMLTOOLS_PB = [p for p in CORPUS_PB if os.sep + "coremltools" + os.sep in p]
# Edge cases the C path leaves to Python on purpose: tensor types with attributes, and nesting
# deeper than it goes.
LEFT_TO_PYTHON = {"tuple_types_and_attributes.pb", "deep_nesting.pb"}


def test_the_corpus_is_there():
    assert len(COREMLTOOLS_PB) > 50 and len(CORPUS_PB) > len(COREMLTOOLS_PB)


@pytest.mark.parametrize("path", CORPUS_PB, ids=lambda p: os.path.relpath(p, CORPUS))
def test_corpus_program(path):
    must = path in COREMLTOOLS_PB or os.path.basename(path) not in LEFT_TO_PYTHON
    check(read(path), must_print=must)


def _examples():
    return sorted(glob.glob(os.path.join(ROOT, "examples", "*.mil"))
                  + glob.glob(os.path.join(ROOT, "examples", "*", "model.mil")))


@pytest.mark.parametrize("path", _examples(), ids=lambda p: os.path.relpath(p, os.path.join(ROOT, "examples")))
def test_example_program(path):
    from miltext.model.text import read_program_file
    data = proto_bytes(read_program_file(path).program)
    check(data, must_print=True)


def _bench_programs():
    """The benchmark's programs (bench/programs.py), made small: a transformer and a big const."""
    import sys
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    try:
        import programs as bench_programs
    finally:
        sys.path.pop(0)
    return {"transformer": bench_programs.transformer_proto(2000, use_coremltools=False)[0],
            "const": bench_programs.big_const_proto(250_000)[0]}


@pytest.mark.parametrize("name", ["transformer", "const"])
def test_bench_program(name):
    check(_bench_programs()[name], must_print=True)


def test_proto_text_falls_back_to_python():
    data = read(os.path.join(CORPUS, "edge", "tuple_types_and_attributes.pb"))
    assert fastprint.program_text(data) is None
    assert fastprint.proto_text(data) == print_program(Program.from_proto(data))
    good = read(COREMLTOOLS_PB[0])
    assert fastprint.proto_text(good) == print_program(Program.from_proto(good))
    with pytest.raises(miltext.ProgramError):
        fastprint.proto_text(b"\xff\xff\xff")   # the Python path's own error


def test_environment_variable_disables_it(monkeypatch):
    data = read(COREMLTOOLS_PB[0])
    assert fastprint.program_text(data) is not None
    monkeypatch.setenv("MILTEXT_PURE_PYTHON", "1")
    assert not fastprint.available()
    assert fastprint.program_text(data) is None
    assert fastprint.proto_text(data) == print_program(Program.from_proto(data))


# ---- random programs ---------------------------------------------------------------------------

@SETTINGS
@given(programs)
def test_random_programs(program):
    check(proto_bytes(program))


@SETTINGS
@given(value_strategy)
def test_every_value_as_an_argument_and_an_attribute(value):
    op = Operation("op", inputs={"x": [value], "name": [value], "val": [value, "v"]},
                   attributes={"a": value, "val": value, "name": value},
                   outputs=[Var("y", TensorType("fp32"))])
    program = Program({"main": Function(opset="CoreML7", blocks={"CoreML7": Block(operations=[op])})},
                      attributes={"k": value})
    check(proto_bytes(program))


def test_common_values_take_the_fast_path():
    """What real programs hold prints in C: every dtype, scalars, nested lists, b64, blobs."""
    values = [Value.tensor(np.arange(6, dtype=np.float16).reshape(2, 3)),
              Value.tensor(np.float32(0.1)), Value.tensor(np.arange(100, dtype=np.float32)),
              Value.tensor(np.array([[1, -2], [3, 4]], np.int8)), Value.tensor(np.int32(7)),
              Value.tensor(np.arange(70, dtype=np.int16)), Value.tensor(np.array([2**63 - 1], np.int64)),
              Value.tensor(np.array([2**64 - 1, 0], np.uint64)), Value.tensor(np.array([1, 2], np.uint32)),
              Value.tensor([True, False]), Value.tensor("a \"b\"\n"), Value.tensor(["x", "y"]),
              Value.tensor(np.array([1.5, -0.0, np.inf], np.float64)),
              Value.tensor(np.array([-8, 7, 0], np.int8), "int4"), Value.tensor(np.array([1, 0, 1], np.uint8), "uint1"),
              Value.tensor(np.array([0.5, 2.0], np.float32), "bf16"),
              Value.tensor(np.array([0.5, -448.0], np.float32), "fp8e4m3fn"),
              Value(TensorType("fp16", (64, 64)), miltext.ir.Blob(64)),
              Value(TensorType("fp16", (2,)), miltext.ir.Blob(0, "other.bin"))]
    ops = [Operation("const", attributes={"val": v, "name": Value.tensor(f"c{i}")},
                     outputs=[Var(f"c{i}", v.type)]) for i, v in enumerate(values)]
    program = Program({"main": Function(opset="CoreML7", blocks={"CoreML7": Block(operations=ops)})})
    text = check(proto_bytes(program), must_print=True)
    assert 'b64"' in text and "int4([-8, 7, 0])" in text
    assert "(64, 64, fp16)(blob)" in text and '(2, fp16)(blob("other.bin", 0))' in text  # offset implied, and not


def test_names_that_need_quoting():
    odd = ["with space", 'q"uote', "back\\slash", "tab\t", "\x00\x7f", "café", "fp32", "dtype12", "", "a.b", "9x",
           "x/y@z", "名前", "\u2028", "True"]
    ops = [Operation(name, inputs={key: [name]}, outputs=[Var(name, TensorType("fp32"))],
                     attributes={"name": Value.tensor(name), key: Value.tensor(1.0)})
           for name in odd for key in (name + "k",)]
    fn = Function(inputs=[Var(n, TensorType("fp32", (1,))) for n in odd], opset="CoreML7",
                  blocks={"CoreML7": Block(operations=ops, outputs=odd)})
    program = Program({"main": fn, "é": Function(opset="x y", blocks={"x y": Block(), "other": Block()})})
    check(proto_bytes(program), must_print=True)


# ---- floats ------------------------------------------------------------------------------------

def formats(name: str, bits, force_slow: bool = False):
    bits = np.asarray(bits, dtype=packing.BITS_DTYPE[name])
    raw = bits.astype(bits.dtype.newbyteorder("<")).tobytes()
    return lexemes.format_floats(dtypes.by_name(name), bits), _fastprint.format_floats(name, raw, force_slow)


def assert_same(name, bits, force_slow=False):
    ref, got = formats(name, bits, force_slow)
    bad = [(hex(int(b)), r, g) for b, r, g in zip(np.asarray(bits).tolist(), ref, got) if r != g]
    assert not bad, f"{len(bad)} {name} patterns differ, e.g. {bad[:5]}"


@pytest.mark.parametrize("name", ["fp16", "bf16"])
@pytest.mark.parametrize("force_slow", [False, True])
def test_every_16_bit_float(name, force_slow):
    fastprint.program_text(b"")  # configures the extension
    assert_same(name, np.arange(65536), force_slow)


@pytest.mark.parametrize("name", ["fp8e4m3fn", "fp8e5m2"])
@pytest.mark.parametrize("force_slow", [False, True])
def test_every_fp8(name, force_slow):
    fastprint.program_text(b"")
    assert_same(name, np.arange(256), force_slow)


@pytest.mark.parametrize("force_slow", [False, True])
def test_fp32_powers_of_two_and_specials(force_slow):
    fastprint.program_text(b"")
    bits = [e << 23 | s | m for e in range(256) for s in (0, 1 << 31) for m in (0, 1, 0x7FFFFF)]
    bits += [1 << k | s for k in range(23) for s in (0, 1 << 31)]   # subnormal powers of two
    bits += [0x7FC00000, 0x7FC00001, 0xFFC00000, 0x7F800001, 0x3F800000 - 1, 0x3F800001]
    assert_same("fp32", bits, force_slow)


def test_a_million_random_fp32():
    fastprint.program_text(b"")
    rng = np.random.default_rng(20240601)
    assert_same("fp32", rng.integers(0, 2**32, 1_000_000, dtype=np.uint64).astype(np.uint32))
    assert_same("fp32", rng.integers(0, 2**32, 100_000, dtype=np.uint64).astype(np.uint32), force_slow=True)


def test_fp32_decimal_boundaries():
    """Values next to 1e-4 and 1e16 (positional or scientific) and next to powers of ten."""
    fastprint.program_text(b"")
    centers = np.array([10.0 ** k for k in range(-45, 39)] + [1e-4, 1e16], np.float32).view(np.uint32)
    bits = (centers[:, None].astype(np.int64) + np.arange(-3, 4)).reshape(-1)
    assert_same("fp32", bits[(bits > 0) & (bits < 0x7F800000)].astype(np.uint32))


def test_fp64():
    fastprint.program_text(b"")
    rng = np.random.default_rng(7)
    special = [0, 1 << 63, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0x7FF8000000000001,
               0xFFF8000000000000, 1, 0x3FB999999999999A]
    assert_same("fp64", np.concatenate([rng.integers(0, 2**64, 100_000, dtype=np.uint64),
                                        np.array(special, np.uint64)]))


# ---- hostile input -----------------------------------------------------------------------------

def _small_corpus(n=6):
    return sorted((p for p in COREMLTOOLS_PB), key=os.path.getsize)[:n]


@pytest.mark.parametrize("path", _small_corpus(), ids=os.path.basename)
def test_every_truncation(path):
    data = read(path)
    for cut in range(len(data)):
        check(data[:cut])


def test_random_corruption():
    rng = random.Random(1234)
    sources = [read(p) for p in _small_corpus(10)]
    for _ in range(3000):
        data = bytearray(rng.choice(sources))
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(data))
            how = rng.random()
            if how < 0.5:
                data[i] = rng.randrange(256)
            elif how < 0.7:
                del data[i:i + rng.randint(1, 8)]
            elif how < 0.85:
                data[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
            else:
                j = rng.randrange(len(data))
                data[i:i] = data[j:j + rng.randint(1, 64)]
        check(bytes(data))


def test_random_bytes():
    rng = random.Random(99)
    for n in list(range(64)) + [1000] * 200:
        _fastprint.program_text(bytes(rng.randrange(256) for _ in range(n)), fastprint.input_orders())
    for _ in range(300):
        check(bytes(rng.randrange(256) for _ in range(rng.randint(0, 200))))


def _varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _program(block: bytes) -> bytes:
    fn = _field(2, b"CoreML7") + _field(3, _field(1, b"CoreML7") + _field(2, block))
    return _varint(1 << 3) + _varint(1) + _field(2, _field(1, b"main") + _field(2, fn))


def test_deep_nesting_gives_none():
    block = b""
    for _ in range(200):   # cond ops inside cond ops: each level a Block inside an Operation
        block = _field(3, _field(1, b"cond") + _field(4, block))
    assert fastprint.program_text(_program(block)) is None
    value = _field(1, _field(1, b"x"))   # tuple of tuple of ... nested beyond any limit
    for _ in range(5000):
        value = _field(3, _field(2, _field(1, value)))
    op = _field(1, b"const") + _field(5, _field(1, b"val") + _field(2, value))
    assert fastprint.program_text(_program(_field(3, op))) is None
    shallow = b""
    for _ in range(3):
        shallow = _field(3, _field(1, b"cond") + _field(4, shallow))
    check(_program(shallow), must_print=True)


def test_oddities_give_none():
    ok = _program(_field(3, _field(1, b"relu")))
    assert check(ok, must_print=True)
    assert fastprint.program_text(ok + _field(15, b"")) is None          # unknown field
    assert fastprint.program_text(ok + _varint(1 << 3) + _varint(1)) is None  # version twice
    dup = _field(2, _field(1, b"main") + _field(2, b""))
    assert fastprint.program_text(ok + dup) is None                      # duplicate map key
    bad_utf8 = _program(_field(3, _field(1, b"re\xfflu")))
    assert fastprint.program_text(bad_utf8) is None
    overlong = b"\x08\x81\x00"                                           # version=1 in two bytes
    assert fastprint.program_text(overlong) is None
    # a huge shape of zero elements: a flat `[]` under its type, as the Python printer writes it
    t = _field(1, _varint(1 << 3) + _varint(11) + _varint(2 << 3) + _varint(2) + _field(3, _field(1, _varint(8) + _varint(2**62)))
               + _field(3, _field(1, _varint(8) + _varint(0))))
    v = _field(2, t) + _field(3, _field(1, _field(1, b"")))
    op = _field(1, b"const") + _field(5, _field(1, b"val") + _field(2, v))
    empty = _program(_field(3, op))
    text = _fastprint.program_text(empty, fastprint.input_orders())
    assert "const(val=(4611686018427387904, 0, fp32)([]))" in text
    assert text == print_program(miltext.Program.from_proto(empty))


def test_buffer_types():
    data = read(COREMLTOOLS_PB[0])
    text = fastprint.program_text(data)
    assert text is not None
    assert fastprint.program_text(bytearray(data)) == text
    assert fastprint.program_text(memoryview(data)) == text
    assert fastprint.program_text(b"") == print_program(Program.from_proto(b"")) == "program(version=0)\n"


# ---- models read from files ----------------------------------------------------------------------

@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(CORPUS, "coremltools", "*.mlpackage")))[:5]
                         + COREMLTOOLS_PB[:3], ids=os.path.basename)
def test_printing_a_model_file_builds_no_object_model(path):
    from miltext.model.file_text import file_text
    from miltext.model.io import read_model
    model = read_model(path)
    text = model.program_text()
    assert model._program is None  # printed straight from the bytes
    assert text == print_program(model.program)
    assert file_text(path).endswith(text)
