"""Weights by reference read from hostile or unlucky files: a device, a header that promises
more than the file holds, values the declared dtype cannot hold, paths out of the model's
folder; each is one located error, found by `check`, the same in `build` and `run`. Headers are
parsed once per file, and a tensor of any shape is read in bounded slices."""
import json
import os
import struct

import numpy as np
import pytest
from safetensors.numpy import save_file

import miltext
from miltext.model import weight_refs
from miltext.model.weight_headers import Headers
from model_cases import assert_clean_failure, leftovers, miltext as run


def const_text(decl: str, ref: str, extra: str = "") -> str:
    """A program whose only weight is `ref`, declared `decl` (such as "(2, 2, fp16)")."""
    return (f'main[CoreML7]() {{\n  block0() {{\n    %c: {decl} = const(val={decl}({ref}), name="c")\n'
            f'{extra}  }} -> (%c)\n}}\n')


UNDEFINED = '    %z: (2, 2, fp16) = relu(x=%q, name="z")\n'


def test_a_device_is_one_located_error_and_the_other_errors_are_still_found(tmp_path):
    (tmp_path / "m.mil").write_text(const_text("(2, 2, fp16)", 'npy("/dev/zero")', UNDEFINED))
    result = run("check", "m.mil", cwd=tmp_path)
    assert result.returncode == 1
    assert "m.mil:3:51: error: /dev/zero: a device, not a regular .npy file" in result.stdout
    assert "m.mil:4:31: error: %q is not defined" in result.stdout


def test_a_fifo_is_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "w.npy")
    (tmp_path / "m.mil").write_text(const_text("(2, 2, fp16)", 'npy("w.npy")'))
    for command in (("check", "m.mil"), ("run", "m.mil"), ("build", "m.mil", "-o", "M.mlpackage")):
        result = run(*command, cwd=tmp_path)
        assert result.returncode == 1, result
        assert "m.mil:3:51: error: w.npy: a pipe, not a regular .npy file" in result.stdout + result.stderr


def npy_claiming(path, shape, dtype="<f4"):
    """A .npy whose header says `shape` but which holds no data (144 bytes for 10^12 floats)."""
    header = repr({"descr": dtype, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (-(10 + len(header) + 1) % 64) + b"\n"
    path.write_bytes(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header)


def test_a_header_promising_more_than_the_file_holds_is_found_by_check(tmp_path):
    npy_claiming(tmp_path / "w.npy", (1000000, 1000000))
    assert os.path.getsize(tmp_path / "w.npy") < 200
    (tmp_path / "m.mil").write_text(const_text("(1000000, 1000000, fp32)", 'npy("w.npy")'))
    result = run("check", "m.mil", cwd=tmp_path)
    assert result.returncode == 1
    assert "m.mil:3:75: error: w.npy is truncated: its header says (1000000, 1000000) x fp32, " \
           "4,000,000,000,000 bytes, but the file holds 0 for it" in result.stdout


def safetensors_file(path, entries: dict, data: bytes = b"") -> None:
    head = json.dumps(entries).encode()
    path.write_bytes(struct.pack("<Q", len(head)) + head + data)


@pytest.mark.parametrize("entry, says", [
    ({"dtype": "F32", "shape": [1000000, 1000000], "data_offsets": [0, 16]}, "is not its 16 bytes"),
    ({"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16000]}, "is truncated: tensor 'w' ends at byte 16,000"),
    ({"dtype": "F32", "shape": [2, -2], "data_offsets": [0, 16]}, "its shape is not a list of sizes"),
    ({"dtype": "F32", "shape": [2, 2], "data_offsets": [16, 0]}, "its data_offsets are not [start, end]"),
])
def test_a_safetensors_header_is_checked_against_the_file(tmp_path, entry, says):
    safetensors_file(tmp_path / "w.safetensors", {"w": entry}, bytes(16))
    (tmp_path / "m.mil").write_text(const_text("(2, 2, fp32)", 'safetensors("w.safetensors", "w")'))
    result = run("check", "m.mil", cwd=tmp_path)
    assert result.returncode == 1 and "m.mil:3:59: error: w.safetensors " in result.stdout, result.stdout
    assert says in result.stdout


def test_a_huge_safetensors_header_length_is_refused_unread(tmp_path):
    (tmp_path / "w.safetensors").write_bytes(struct.pack("<Q", 1 << 62) + b"{}")
    (tmp_path / "m.mil").write_text(const_text("(2, 2, fp32)", 'safetensors("w.safetensors", "w")'))
    result = run("check", "m.mil", cwd=tmp_path)
    assert "its header says it is 4,611,686,018,427,387,904 bytes; the file has 10" in result.stdout


def test_a_cast_that_overflows_is_an_error_in_build_and_run(tmp_path):
    np.save(tmp_path / "w.npy", np.array([[1.0, 1e300], [2.0, 3.0]]))
    (tmp_path / "m.mil").write_text(const_text("(2, 2, fp16)", 'npy("w.npy", from=fp64)'))
    says = "m.mil:3:51: error: w.npy has values beyond fp16's largest, 65504 (its largest here is 1e+300)"
    built = run("build", "m.mil", "-o", "M.mlpackage", cwd=tmp_path)
    assert_clean_failure(built)
    assert built.stderr.startswith(says)
    assert not (tmp_path / "M.mlpackage").exists() and leftovers(tmp_path) == []
    ran = run("run", "m.mil", cwd=tmp_path)
    assert ran.returncode == 1 and ran.stderr.startswith(says), ran.stderr
    # a value that fits is cast (rounded) as before; inf and nan stay what they are
    np.save(tmp_path / "w.npy", np.array([[1.0, 60000.0], [np.inf, np.nan]]))
    ran = run("run", "m.mil", "-o", "out.npz", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    got = np.load(tmp_path / "out.npz")["c"]
    assert got.dtype == np.float16 and got[0, 1] == np.float16(60000.0) and np.isinf(got[1, 0]) and np.isnan(got[1, 1])


def test_run_refuses_an_integer_build_refuses(tmp_path):
    """A uint32 value past int32's range: run used to wrap it to -1 where build refused it."""
    np.save(tmp_path / "u.npy", np.array([[1, 2], [3, 0xFFFFFFFF]], np.uint32))
    (tmp_path / "m.mil").write_text(const_text("(2, 2, int32)", 'npy("u.npy", from=uint32)'))
    says = "m.mil:3:53: error: u.npy has values outside int32's range [-2147483648, 2147483647]"
    built = run("build", "m.mil", "-o", "M.mlpackage", cwd=tmp_path)
    ran = run("run", "m.mil", cwd=tmp_path)
    assert built.stderr.startswith(says), built.stderr
    assert ran.returncode == 1 and ran.stderr.startswith(says), ran.stderr


def test_run_reads_a_tensor_as_build_writes_it(tmp_path):
    values = np.random.default_rng(3).standard_normal((3, 5)).astype(np.float32)
    save_file({"w": values}, str(tmp_path / "w.safetensors"))
    program = miltext.loads(const_text("(3, 5, fp16)", 'safetensors("w.safetensors", "w", from=fp32)'))
    got = miltext.run(program, {}, weights=str(tmp_path))["c"]
    assert got.dtype == np.float16 and np.array_equal(got, values.astype(np.float16))


@pytest.mark.parametrize("path, outside", [("w.npy", False), ("sub/../w.npy", False), ("../w.npy", True),
                                           ("ABS", True), ("link.npy", True)])
def test_references_can_be_confined_to_the_models_folder(tmp_path, path, outside):
    model = tmp_path / "model"
    model.mkdir()
    (model / "sub").mkdir()
    for folder in (model, tmp_path):
        np.save(folder / "w.npy", np.ones((2, 2), np.float16))
    os.symlink(tmp_path / "w.npy", model / "link.npy")
    path = str(tmp_path / "w.npy") if path == "ABS" else path
    (model / "m.mil").write_text(const_text("(2, 2, fp16)", f'npy("{path}")'))
    for command in (("check",), ("run",), ("build", "-o", "M.mlpackage")):
        args = (command[0], "m.mil", *command[1:])
        free, confined = run(*args, cwd=model), run(*args, "--confine-refs", cwd=model)
        assert free.returncode == 0, free.stderr
        if outside:
            assert confined.returncode == 1
            assert f"m.mil:3:51: error: {path} is outside the model's folder" in confined.stdout + confined.stderr
        else:
            assert confined.returncode == 0, confined.stderr


def test_the_api_confines_references_and_keeps_headers(tmp_path):
    np.save(tmp_path / "w.npy", np.ones((2, 2), np.float16))
    text = const_text("(2, 2, fp16)", 'npy("../w.npy")')
    sub = tmp_path / "sub"
    sub.mkdir()
    program = miltext.loads(text)
    filename = str(sub / "m.mil")
    assert miltext.check(program, filename=filename, source=text) == []
    found = miltext.check(program, filename=filename, source=text, confine_refs=True, ref_headers=Headers())
    assert [d.message for d in found] == ["../w.npy is outside the model's folder, and weight references are "
                                          "confined to it (--confine-refs)"]


def test_each_header_is_parsed_once_per_check(tmp_path, monkeypatch):
    from miltext.model import weight_headers
    save_file({f"t{i}": np.ones(2, np.float16) for i in range(50)}, str(tmp_path / "w.safetensors"))
    lines = [f'    %c{i}: (2, fp16) = const(val=(2, fp16)(safetensors("w.safetensors", "t{i}")), name="c{i}")'
             for i in range(50)]
    text = "main[CoreML7]() {\n  block0() {\n" + "\n".join(lines) + "\n  } -> (%c0)\n}\n"
    parsed = []
    real = weight_headers._Safetensors.__init__
    monkeypatch.setattr(weight_headers._Safetensors, "__init__", lambda self, *a: parsed.append(1) or real(self, *a))
    program = miltext.loads(text)
    assert miltext.check(program, filename=str(tmp_path / "m.mil"), source=text) == []
    assert len(parsed) == 1
    headers = Headers()          # one kept between checks (the language server's) parses it once in all
    for _ in range(3):
        miltext.check(program, filename=str(tmp_path / "m.mil"), source=text, ref_headers=headers)
    assert len(parsed) == 2
    os.utime(tmp_path / "w.safetensors", ns=(1, 1))     # a file that changes is parsed again
    miltext.check(program, filename=str(tmp_path / "m.mil"), source=text, ref_headers=headers)
    assert len(parsed) == 3


@pytest.mark.parametrize("shape, fortran", [((1, 1000), False), ((1000,), False), ((7, 3, 50), False),
                                            ((40, 30), True)])
def test_a_tensor_of_any_shape_is_read_in_bounded_slices(tmp_path, monkeypatch, shape, fortran):
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    np.save(tmp_path / "w.npy", np.asfortranarray(values) if fortran else values)
    monkeypatch.setattr(weight_refs, "CHUNK_BYTES", 64)
    ref = miltext.loads(const_text(f"({', '.join(map(str, shape))}, fp32)", 'npy("w.npy")')) \
        .functions["main"].block.operations[0].attributes["val"]
    header = weight_refs.check(ref.data, ref.type, str(tmp_path))
    parts = list(weight_refs.arrays(ref.data, str(tmp_path), header))
    assert max(p.nbytes for p in parts) <= 64
    assert np.array_equal(np.concatenate(parts), values.reshape(-1))
    encoded = b"".join(weight_refs.encoded(ref.data, str(tmp_path), header, "fp16"))
    assert encoded == values.astype("<f2").tobytes()


@pytest.mark.parametrize("order", ["<f8", ">f8"])
def test_an_overflowing_cast_is_found_whatever_the_byte_order(tmp_path, order):
    np.save(tmp_path / "w.npy", np.array([1.0, 1e300], order))
    program = miltext.loads(const_text("(2, fp32)", 'npy("w.npy", from=fp64)'))
    with pytest.raises(weight_refs.WeightRefError, match="beyond fp32's largest"):
        miltext.run(program, {}, weights=str(tmp_path))
