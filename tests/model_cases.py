"""Shared by the model-file tests: the corpus packages, the miltext command as a user runs it,
and coremltools' own reading of a model (its Model.proto, so "equal" means equal to Core ML)."""
import os
import shutil
import subprocess
import sys

from support.corpus import corpus_files

PACKAGES = corpus_files("coremltools", ".mlpackage")
LARGEST = max(PACKAGES, key=lambda p: os.path.getsize(os.path.join(p, "Data", "com.apple.CoreML", "weights", "weight.bin")))


def mlmodel_of(package) -> str:
    return os.path.join(package, "Data", "com.apple.CoreML", "model.mlmodel")


def weights_of(package) -> str:
    return os.path.join(package, "Data", "com.apple.CoreML", "weights", "weight.bin")


def name_of(package) -> str:
    return os.path.basename(package)[:-len(".mlpackage")]


def copy_package(package, folder) -> str:
    target = os.path.join(folder, os.path.basename(package))
    shutil.copytree(package, target)
    return target


def coremltools_model(data: bytes):
    """A model as coremltools reads it (CoreML.Specification.Model, coremltools' full schema);
    the test is skipped, saying so, where coremltools is not installed (it is an optional extra)."""
    import pytest
    pytest.importorskip("coremltools")
    from coremltools.proto import Model_pb2
    return Model_pb2.Model.FromString(data)


def read(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def miltext(*args, cwd, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miltext.cli", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, encoding="utf-8", timeout=300, **kwargs)


def assert_clean_failure(result, status: int = 1):
    """Failed as a tool should: the status, a message on stderr, nothing on stdout, no traceback."""
    assert result.returncode == status, (result.returncode, result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.strip()
    assert "Traceback" not in result.stderr, result.stderr


def snapshot(path) -> dict | bytes:
    """Everything at `path`, byte for byte: a file's bytes, or each file of a folder by its path."""
    path = str(path)
    if os.path.isfile(path):
        with open(path, "rb") as f:
            return f.read()
    found = {}
    for root, _, names in os.walk(path):
        for name in names:
            full = os.path.join(root, name)
            with open(full, "rb") as f:
                found[os.path.relpath(full, path)] = f.read()
    return found


def leftovers(folder) -> list:
    """What a failed write could leave behind: temporary files and folders."""
    found = []
    for root, dirs, files in os.walk(folder):
        found += [os.path.join(root, n) for n in dirs + files if n.startswith(".miltext-") or n.endswith(".tmp")]
    return found
