"""Packages with special files and links in them: every command refuses them with a message
naming the file, at once (no hang, no endless read), and reads nothing outside the package."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from support.corpus import CORPUS

PACKAGE = os.path.join(CORPUS, "coremltools", "torch_mlp.mlpackage")
CONTENT = os.path.join("Data", "com.apple.CoreML")
TIMEOUT = 30


def miltext(*args, cwd):
    return subprocess.run([sys.executable, "-m", "miltext.cli", *args], cwd=cwd, capture_output=True,
                          text=True, encoding="utf-8", errors="replace", timeout=TIMEOUT)


@pytest.fixture
def package(tmp_path):
    target = tmp_path / "m.mlpackage"
    shutil.copytree(PACKAGE, target)
    return target


def fifo_manifest(pkg, outside):
    (pkg / "Manifest.json").unlink()
    os.mkfifo(pkg / "Manifest.json")


def zero_manifest(pkg, outside):
    (pkg / "Manifest.json").unlink()
    os.symlink("/dev/zero", pkg / "Manifest.json")


def fifo_weight(pkg, outside):
    os.mkfifo(pkg / CONTENT / "weights" / "extra.bin")


def fifo_weight_bin(pkg, outside):
    (pkg / CONTENT / "weights" / "weight.bin").unlink()
    os.mkfifo(pkg / CONTENT / "weights" / "weight.bin")


def data_link_out(pkg, outside):
    shutil.move(str(pkg / "Data"), outside / "Data")
    os.symlink(outside / "Data", pkg / "Data")


def weights_link_out(pkg, outside):
    weights = pkg / CONTENT / "weights" / "weight.bin"
    shutil.move(str(weights), outside / "weight.bin")
    os.symlink(outside / "weight.bin", weights)


def list_manifest(pkg, outside):
    (pkg / "Manifest.json").write_text("[1, 2]")


def deep_manifest(pkg, outside):
    (pkg / "Manifest.json").write_text("[" * 100_000 + "]" * 100_000)


def nul_in_path(pkg, outside):
    manifest = json.loads((pkg / "Manifest.json").read_text())
    for entry in manifest["itemInfoEntries"].values():
        entry["path"] = entry["path"] + "\x00x"
    (pkg / "Manifest.json").write_text(json.dumps(manifest))


BREAKS = {f.__name__: f for f in (fifo_manifest, zero_manifest, fifo_weight, fifo_weight_bin, data_link_out,
                                  weights_link_out, list_manifest, deep_manifest, nul_in_path)}
# What each command must say (part of the message) for each break.
SAYS = {"fifo_manifest": "not a regular", "zero_manifest": "not a regular", "fifo_weight": "not a regular",
        "fifo_weight_bin": "not a regular", "data_link_out": "out of the package", "weights_link_out": "link out",
        "list_manifest": "itemInfoEntries", "deep_manifest": "Manifest.json", "nul_in_path": "out of the package"}
COMMANDS = {"print": ["print", "m.mlpackage"], "textconv": ["textconv", "m.mlpackage"],
            "unpack": ["unpack", "m.mlpackage", "out"], "diff": ["diff", "m.mlpackage", "m.mlpackage"],
            "build": ["build", "m.mlpackage", "-o", "copy.mlpackage"], "check": ["check", "m.mlpackage"]}
# Breaks that leave the program readable: commands that read only the program may go on.
PROGRAM_STILL_READABLE = {"fifo_weight"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("brk", sorted(BREAKS))
def test_a_broken_package_is_refused_at_once(package, tmp_path, brk, command):
    outside = tmp_path / "outside"
    outside.mkdir()
    BREAKS[brk](package, outside)
    before = sorted(os.listdir(outside))
    result = miltext(*COMMANDS[command], cwd=tmp_path)
    output = result.stdout + result.stderr
    assert "internal error" not in output and "Traceback" not in output, output
    assert sorted(os.listdir(outside)) == before
    if command == "textconv":  # never fails, for git: the reason is in its output
        assert result.returncode == 0
        if brk not in PROGRAM_STILL_READABLE | {"fifo_weight_bin", "weights_link_out"}:
            assert SAYS[brk] in output, output
        return
    if brk in PROGRAM_STILL_READABLE and command in ("print", "diff", "check"):
        assert result.returncode == 0, output
        return
    if brk in ("fifo_weight_bin", "weights_link_out") and command == "print" \
            or (brk, command) == ("fifo_weight_bin", "diff"):
        assert result.returncode == 0, output  # the program reads without its weights
        return
    assert result.returncode == (2 if command == "diff" else 1), output  # diff's trouble status is 2
    assert SAYS[brk] in output, output
    assert not (tmp_path / "out").exists() and not (tmp_path / "copy.mlpackage").exists()


def test_check_weights_refuses_a_weight_file_linked_out_of_the_package(package, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    weights_link_out(package, outside)
    (tmp_path / "model.mil").write_text(miltext("print", "m.mlpackage", cwd=tmp_path).stdout)
    result = miltext("check", "model.mil", "--weights", "m.mlpackage", cwd=tmp_path)
    assert result.returncode == 1
    assert "link out" in result.stdout + result.stderr


# ---- textconv of special files, and text with a byte-order mark -----------------------------------

@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "fifo.bin", "zero_link.mil"])
def test_textconv_of_a_special_file_says_so_at_once(tmp_path, special):
    """git runs textconv on whatever is tracked: a FIFO blocked for ever, /dev/zero filled memory."""
    if special.startswith("fifo"):
        os.mkfifo(tmp_path / special)
    elif special == "zero_link.mil":
        os.symlink("/dev/zero", tmp_path / special)
    result = miltext("textconv", special, cwd=tmp_path)
    assert result.returncode == 0 and result.stderr == ""
    kind = "a pipe" if special.startswith("fifo") else "a device"
    assert result.stdout == f"# miltext: not shown as MIL text ({kind}, not a regular file; " \
                            "miltext reads only regular files)\n"


BOM_TEXT = """\ufeffmain[CoreML7](%x: (1, 4, fp32)) {
  block0() {
    %y: (1, 4, fp32) = relu(x=%x,   name="y")
    %z: (1, 4, fp32) = relu(x=%q, name="z")
  } -> (%y)
}
"""


def test_a_byte_order_mark_is_no_part_of_the_text(tmp_path):
    (tmp_path / "m.mil").write_text(BOM_TEXT.replace("    %z: (1, 4, fp32) = relu(x=%q, name=\"z\")\n", ""),
                                    encoding="utf-8")
    (tmp_path / "bad.mil").write_text(BOM_TEXT, encoding="utf-8")
    printed = miltext("print", "m.mil", cwd=tmp_path)
    assert printed.returncode == 0 and printed.stdout.startswith("main[CoreML7](%x: (1, 4, fp32)) {\n")
    checked = miltext("check", "bad.mil", cwd=tmp_path)       # positions count from after the mark
    assert "bad.mil:4:31: error: %q is not defined" in checked.stdout
    for command in (("build", "m.mil", "-o", "m.mlpackage"), ("infer", "m.mil"), ("run", "m.mil", "-i", "x=[[1, -2, 3, -4]]")):
        result = miltext(*command, cwd=tmp_path)
        assert result.returncode == 0, (command, result.stderr)
    stdin = subprocess.run([sys.executable, "-m", "miltext.cli", "check", "-"], input=(tmp_path / "bad.mil").read_bytes(),
                           capture_output=True, cwd=tmp_path, timeout=TIMEOUT)
    assert b"<stdin>:4:31: error: %q is not defined" in stdin.stdout
    import miltext as api
    assert list(api.load(tmp_path / "m.mil").functions) == ["main"]


def test_fmt_keeps_a_byte_order_mark(tmp_path):
    path = tmp_path / "m.mil"
    path.write_text(BOM_TEXT.replace("    %z: (1, 4, fp32) = relu(x=%q, name=\"z\")\n", ""), encoding="utf-8")
    result = miltext("fmt", "m.mil", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbfmain[") and b'relu(x=%x, name="y")' in data
    assert miltext("fmt", "--check", "m.mil", cwd=tmp_path).returncode == 0
