"""miltext run on hostile and unlucky input (issue 25): every loop bounded by time, every
allocation checked before it is made, located errors instead of internal ones, and no silent
wrong answer from -o or --expect."""
import time
import zipfile

import numpy as np
import pytest

import miltext
from miltext.cli import main
from miltext.interpreter import RunError, run


def program(body: str, inputs: str = "%x: (2, fp32)", outputs: str = "%y") -> str:
    return f"main[CoreML7]({inputs}) {{\n  block0() {{\n{body}\n  }} -> ({outputs})\n}}\n"


LOOP = """    %y: (1, fp32) = while_loop(loop_vars=(%x), name="forever")
      block1(%a: (1, fp32)) {
        %c: (bool) = less(x=0.0, y=1.0, name="c")
      } -> (%c)
      block2(%a: (1, fp32)) {
        %b: (1, fp32) = add(x=%a, y=1.0, name="b")
      } -> (%b)"""

NESTED = """    %y: (1, fp32) = while_loop(loop_vars=(%x), name="outer")
      block1(%a: (1, fp32)) {
        %c: (bool) = less(x=0.0, y=1.0, name="c")
      } -> (%c)
      block2(%a: (1, fp32)) {
        %b: (1, fp32) = while_loop(loop_vars=(%a), name="inner")
          block3(%i: (1, fp32)) {
            %d: (bool) = less(x=0.0, y=1.0, name="d")
          } -> (%d)
          block4(%i: (1, fp32)) {
            %e: (1, fp32) = add(x=%i, y=1.0, name="e")
          } -> (%e)
      } -> (%b)"""


@pytest.mark.parametrize("body, loop", [(LOOP, "forever"), (NESTED, "inner")])
def test_an_endless_loop_stops_at_the_timeout_naming_the_loop(body, loop):
    text = program(body, "%x: (1, fp32)")
    start = time.monotonic()
    with pytest.raises(RunError, match=rf"while_loop {loop} was stopped after [\d,]+ passes: the run took longer than 0.5 s \(--timeout\)") as e:
        run(miltext.loads(text), {"x": np.zeros(1, np.float32)}, timeout=0.5)
    assert time.monotonic() - start < 3
    assert e.value.loc[0] == text.split("\n").index(next(l for l in text.split("\n") if f'name="{loop}"' in l)) + 1


def test_the_timeout_is_an_option_of_the_command(tmp_path, capsys):
    (tmp_path / "loop.mil").write_text(program(LOOP, "%x: (1, fp32)"))
    start = time.monotonic()
    assert main(["run", str(tmp_path / "loop.mil"), "-i", "x=[1.0]", "--timeout", "0.5"]) == 1
    assert time.monotonic() - start < 5
    err = capsys.readouterr().err
    assert f"{tmp_path / 'loop.mil'}:3:5: error: while_loop forever was stopped" in err
    for bad in ("0", "-1", "nan", "soon"):
        with pytest.raises(SystemExit) as e:
            main(["run", str(tmp_path / "loop.mil"), "--timeout", bad])
        assert e.value.code == 2


X2 = {"x": np.zeros(2, np.float32)}
X4 = {"x": np.ones((1, 2, 2, 2), np.float32)}


@pytest.mark.parametrize("body, inputs, says", [
    # the declared type is a lie: the kernel checks what it is about to make
    ('    %y: (2, fp32) = fill(shape=[100000, 100000, 100], value=1.0, name="y")', X2,
     r"fill: a tensor of shape \(100000, 100000, 100\) needs 3.64 TiB"),
    ('    %y: (2, fp32) = tile(x=%x, reps=[500000000000], name="y")', X2, r"tile: a tensor of shape \(1000000000000,\)"),
    ('    %y: (2, fp32) = pad(x=%x, pad=[0, 100000000000], name="y")', X2, r"pad: a tensor of shape \(100000000002,\)"),
    ('    %y: (2, fp32) = range_1d(start=0.0, end=1e15, step=1.0, name="y")', X2, r"range_1d: a tensor of shape"),
    ('    %y: (2, fp32) = add(x=%z, y=%w, name="y")', {"x": np.zeros(2, np.float32)}, None),
    ('    %y: (2, fp32) = random_normal(shape=[100000, 1000000], name="y")', X2, r"random_normal: a tensor of shape"),
    ('    %y: (2, fp32) = one_hot(indices=int32([1]), one_hot_vector_size=100000000000, name="y")', X2, r"one_hot: a tensor"),
    ('    %y: (2, fp32) = upsample_nearest_neighbor(x=%x, scale_factor_height=100000.0, scale_factor_width=100000.0, name="y")',
     X4, r"upsample_nearest_neighbor: a tensor of shape \(1, 2, 200000, 200000\)"),
    # declared, and checked before the kernel runs
    ('    %y: (100000, 100000, 100, fp32) = fill(shape=[100000, 100000, 100], value=1.0, name="y")', X2,
     r"fill: output %y of shape \(100000, 100000, 100\) needs 3.64 TiB, more than --max-memory \(1 GiB\)"),
])
def test_a_tensor_past_the_memory_limit_is_refused_before_it_is_made(body, inputs, says):
    if says is None:     # a broadcast of two big inputs
        text = program(body, "%z: (200000, 1, fp32), %w: (1, 200000, fp32)")
        inputs, says = {"z": np.zeros((200000, 1), np.float32), "w": np.zeros((1, 200000), np.float32)}, \
            r"add: a tensor of shape \(200000, 200000\) needs 298 GiB"
    else:
        text = program(body, "%x: (1, 2, 2, 2, fp32)" if inputs is X4 else "%x: (2, fp32)")
    with pytest.raises(RunError, match=says):
        run(miltext.loads(text), inputs, max_memory=1 << 30)


def test_local_response_norm_of_a_huge_size_takes_no_memory_for_it():
    text = program('    %y: (1, 2, 2, 2, fp32) = local_response_norm(x=%x, size=2147483647, name="y")', "%x: (1, 2, 2, 2, fp32)")
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 2, 2)
    got = run(miltext.loads(text), {"x": x}, max_memory=1 << 20)["y"]
    total = (x ** 2).sum(axis=1, keepdims=True)     # every channel is in every window
    np.testing.assert_allclose(got, x / (1 + 1e-4 / 2147483647 * total) ** 0.75, rtol=1e-6)


def test_the_values_a_run_holds_count_towards_the_limit():
    body = "\n".join(f'    %f{i}: (1024, 1024, fp32) = fill(shape=[1024, 1024], value={i}.0, name="f{i}")' for i in range(5))
    body += '\n    %y: (5, 1024, 1024, fp32) = stack(values=(%f0, %f1, %f2, %f3, %f4), axis=0, name="y")'
    with pytest.raises(RunError, match="needs 20 MiB besides the 20 MiB the run holds"):
        run(miltext.loads(program(body)), X2, max_memory=30 << 20)
    assert run(miltext.loads(program(body)), X2, max_memory=64 << 20)["y"].shape == (5, 1024, 1024)


def test_max_memory_is_an_option_of_the_command(tmp_path, capsys):
    path = tmp_path / "m.mil"
    path.write_text(program('    %y: (2, fp32) = fill(shape=[1000, 1000, 100], value=1.0, name="y")'))
    assert main(["run", str(path), "-i", "x=[1.0, 2.0]", "--max-memory", "100M"]) == 1
    assert "more than --max-memory (100 MiB)" in capsys.readouterr().err
    for bad in ("0", "lots", "-5G"):
        with pytest.raises(SystemExit) as e:
            main(["run", str(path), "--max-memory", bad])
        assert e.value.code == 2


def test_an_npy_input_whose_header_claims_more_than_the_file_holds(tmp_path, capsys):
    path = tmp_path / "m.mil"
    path.write_text(program('    %y = identity(x=%x)'))
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000,), }"
    data = b"\x93NUMPY\x01\x00" + len(header.ljust(117) + "\n").to_bytes(2, "little") + (header.ljust(117) + "\n").encode()
    (tmp_path / "big.npy").write_bytes(data + b"\0" * 16)
    assert len(data) < 200
    assert main(["run", str(path), "-i", f"x={tmp_path / 'big.npy'}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{tmp_path / 'big.npy'}: error: is truncated: its header says (1000000000000,) x fp32")


@pytest.mark.parametrize("body, says", [
    ('    %y: (2, fp32) = range_1d(start=0.0, end=inf, step=1.0, name="y")', "range_1d: start, end and step must be finite"),
    ('    %y: (2, fp32) = range_1d(start=nan, end=1.0, step=1.0, name="y")', "range_1d: start, end and step must be finite"),
    ('    %y: (2, fp32) = range_1d(start=0.0, end=1.0, step=0.0, name="y")', "range_1d: step must not be 0"),
    ('    %y: (fp32) = layer_norm(x=1.0, axes=[0], name="y")', r"layer_norm: axes \[0\] are not all axes of x, which has rank 0"),
    ('    %y: (0, fp32) = constexpr_lut_to_dense(lut=fp32([]), indices=uint8([]), shape=uint32([0]), name="y")',
     "a palette of 0 values: its size must be a power of two"),
    ('    %y: (fp32) = constexpr_affine_dequantize(quantized_data=uint8(0), zero_point=uint8(0), scale=1.0, axis=0, name="y")',
     "quantized_data is a scalar"),
    ('    %y: (2, fp32) = constexpr_cast(name="y")', "constexpr_cast: input 'source_val' is required"),
    ('    %y: (1, 2, 2, 2, fp32) = local_response_norm(x=%x, size=0, name="y")', "needs a size of 1 or more"),
])
def test_inputs_a_kernel_cannot_take_are_located_errors(body, says):
    four = "local_response" in body
    text = program(body, "%x: (1, 2, 2, 2, fp32)" if four else "%x: (2, fp32)")
    text = text.replace("CoreML7", "CoreML6" if "shape=uint32" in body or "affine" in body else "CoreML7")
    with pytest.raises(RunError, match=says) as e:
        run(miltext.loads(text), X4 if four else X2)
    assert e.value.loc == (3, 5)


def test_threshold_with_an_infinite_alpha_on_integers():
    for alpha, want in (("inf", [2147483647] * 3), ("-inf", [-5, 0, 7]), ("1.5", [1, 1, 7])):
        text = program(f'    %y: (3, int32) = threshold(x=int32([-5, 0, 7]), alpha={alpha}, name="y")')
        assert run(miltext.loads(text), X2)["y"].tolist() == want
    with pytest.raises(RunError, match="alpha is NaN"):
        run(miltext.loads(program('    %y: (3, int32) = threshold(x=int32([-5, 0, 7]), alpha=nan, name="y")')), X2)


@pytest.mark.parametrize("literal", ['"abc"', "{1: 2}", "[[1.0], [1.0, 2.0]]", "1j", "None", "[1, [2]]"])
def test_an_input_literal_that_is_no_tensor_is_an_error(tmp_path, capsys, literal):
    path = tmp_path / "m.mil"
    path.write_text(program('    %y = identity(x=%x)'))
    assert main(["run", str(path), "-i", f"x={literal}"]) == 1
    err = capsys.readouterr().err
    assert "is not a tensor: write numbers" in err and "internal error" not in err


def test_every_output_name_goes_into_the_npz(tmp_path):
    path = tmp_path / "m.mil"
    names = ["file", "allow_pickle", "state_x", "args", "kwds"]
    path.write_text(program("\n".join(f'    %{n} = mul(x=%x, y={i}.0)' for i, n in enumerate(names)),
                            outputs=", ".join("%" + n for n in names)))
    assert main(["run", str(path), "-i", "x=[1.0, 2.0]", "-o", str(tmp_path / "out.npz")]) == 0
    with np.load(tmp_path / "out.npz") as out:
        assert sorted(out.files) == sorted(names)
        for i, n in enumerate(names):
            assert out[n].tolist() == [i * 1.0, i * 2.0]


def test_an_output_and_a_state_under_one_npz_name_is_refused(tmp_path, capsys):
    path = tmp_path / "m.mil"
    (tmp_path / "out.npz").write_bytes(b"the user's")
    path.write_text("main[CoreML8](%x: (2, fp32)(State)) {\n  block0() {\n"
                    '    %state_x: (2, fp32) = read_state(input=%x, name="state_x")\n  } -> (%state_x)\n}\n')
    assert main(["run", str(path), "-i", "x=[1.0, 2.0]", "-o", str(tmp_path / "out.npz")]) == 1
    assert "output %state_x and state %x would both be state_x" in capsys.readouterr().err
    assert (tmp_path / "out.npz").read_bytes() == b"the user's"


def expect(tmp_path, got: list, reference, capsys):
    path = tmp_path / "m.mil"
    path.write_text(program('    %y = identity(x=%x)'))
    np.savez(tmp_path / "ref.npz", y=reference)
    status = main(["run", str(path), "-i", f"x={got}", "--expect", str(tmp_path / "ref.npz")])
    return status, capsys.readouterr()


@pytest.mark.parametrize("got, reference, status", [
    ("[1e999, -1e999]", np.array([np.inf, -np.inf]), 0),         # equal infinities match
    ("[1e999, 1.0]", np.array([-np.inf, 1.0]), 1),               # of the other sign do not
    ("[1.0, 2.0]", np.array([np.inf, 2.0]), 1),                  # nor a number an infinity
    ("[1e999, 2.0]", np.array([1.0, 2.0]), 1),
    ("[1.0, 2.0]", np.array([1.0, np.nan]), 1),                  # a NaN matches only a NaN
    ("[1.0, 2.0]", np.array([1 + 0j, 2 + 0j]), 0),               # complex, compared as complex
    ("[1.0, 2.0]", np.array([1 + 5j, 2 + 0j]), 1),               # not on its real part only
])
def test_expect_compares_infinities_nans_and_complex_numbers(tmp_path, capsys, got, reference, status):
    assert expect(tmp_path, got, reference, capsys)[0] == status


def test_expect_takes_nan_for_nan(tmp_path, capsys):
    text = program('    %y = real_div(x=%x, y=0.0)')
    (tmp_path / "m.mil").write_text(text)
    np.savez(tmp_path / "ref.npz", y=np.array([np.nan, np.inf], np.float32))
    assert main(["run", str(tmp_path / "m.mil"), "-i", "x=[0.0, 1.0]", "--expect", str(tmp_path / "ref.npz")]) == 0


@pytest.mark.parametrize("make, says", [
    (lambda p: np.savez(p, y=np.array(["a", "b"])), "holds <U1 values, not numbers"),
    (lambda p: np.savez(p, y=np.array([{}, 1], dtype=object)), "y.npy: holds Python objects, not numbers"),
    (lambda p: p.write_bytes(b"PK\x03\x04 junk"), "not an .npz file"),
    (lambda p: zipfile.ZipFile(p, "w").writestr("y.txt", "hello"), "'y.txt' is no .npy array"),
    (lambda p: zipfile.ZipFile(p, "w").writestr(
        "y.npy", b"\x93NUMPY\x01\x00v\x00" + "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }".ljust(117).encode() + b"\n"),
     "y.npy: is truncated"),
])
def test_a_hostile_reference_is_an_error_naming_it(tmp_path, capsys, make, says):
    make(tmp_path / "ref.npz")
    (tmp_path / "m.mil").write_text(program('    %y = identity(x=%x)'))
    (tmp_path / "out.npz").write_bytes(b"the user's")
    assert main(["run", str(tmp_path / "m.mil"), "-i", "x=[1.0, 2.0]", "--expect", str(tmp_path / "ref.npz"),
                 "-o", str(tmp_path / "out.npz")]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'ref.npz'}" in err and says in err and "internal error" not in err
    assert (tmp_path / "out.npz").read_bytes() == b"the user's"
