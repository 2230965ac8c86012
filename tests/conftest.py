"""Shared test fixtures: the corpus copied into tests/corpus (scripts/sync_corpus.py)."""
import json
import os

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def corpus_files(folder: str, suffix: str) -> list[str]:
    path = os.path.join(CORPUS, folder)
    return sorted(os.path.join(path, f) for f in os.listdir(path) if f.endswith(suffix))


def proto_cases() -> list[str]:
    return corpus_files("coremltools", ".pb") + corpus_files("edge", ".pb")


def print_cases() -> list[str]:
    return corpus_files("coremltools", ".pymil.txt") + corpus_files("coremltools", ".pymil_src.txt")


def manifest() -> dict:
    with open(os.path.join(CORPUS, "coremltools", "manifest.json")) as f:
        return {c["name"]: c for c in json.load(f)["cases"]}


def case_id(path: str) -> str:
    return os.path.basename(path)


@pytest.fixture(scope="session")
def corpus_manifest():
    return manifest()


# ---- coremltools, an optional extra ----------------------------------------------------------

def needs_coremltools(why: str) -> None:
    """Skip the calling test, saying why, where coremltools (the `coremltools` extra, which
    `make test` installs) is not installed."""
    import importlib.util
    if importlib.util.find_spec("coremltools") is None:
        pytest.skip(f"coremltools is not installed (pip install -e '.[coremltools]'): {why}")


# ---- the native fast paths (miltext.native) ----------------------------------------------------

def require_native(module: str):
    """The native extension `module` (e.g. "miltext.text.mil._fastprint"). `make test` builds it
    (pip install -e .); a missing build fails the test module instead of skipping it."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.fail(f"{module} is not built ({e}): install the package with a C compiler "
                    "(`make test` or `pip install -e .`) so the extension is compiled", pytrace=False)


@pytest.fixture
def native_enabled(monkeypatch):
    """The native fast paths on, whatever MILTEXT_PURE_PYTHON the tests were started with."""
    monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)


def agrees_with_python(native, python, arg, must_answer: bool = False):
    """native(arg), checked equal to python(arg) (the reference: its result, or the exception it
    raised) whenever the native path answers; None when it gives up, which `must_answer` forbids."""
    got = native(arg)
    if got is None:
        assert not must_answer, "the native path gave up on input it should handle"
        return None
    ref = python(arg)
    assert not isinstance(ref, BaseException), f"the native path answered where the Python path fails: {ref!r}"
    assert got == ref
    return got
