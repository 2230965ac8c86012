"""The fixtures several test modules share; the helpers they share are in tests/support."""
import pytest

from support.corpus import manifest


@pytest.fixture(scope="session")
def corpus_manifest():
    return manifest()


@pytest.fixture
def native_enabled(monkeypatch):
    """The native fast paths on, whatever MILTEXT_PURE_PYTHON the tests were started with."""
    monkeypatch.delenv("MILTEXT_PURE_PYTHON", raising=False)


@pytest.fixture(scope="module")
def client():
    """`miltext lsp` running as a subprocess, initialized, for the tests of one module."""
    from support.lsp import running_client
    with running_client() as c:
        yield c


@pytest.fixture
def repo(tmp_path):
    """A new git repository in tmp_path, with a home of its own (support.git.scratch_repo)."""
    from support.git import scratch_repo
    return scratch_repo(tmp_path)


@pytest.fixture
def kernel_calls(monkeypatch):
    """The op types whose kernels run, in order, in interpreter sessions made after the fixture
    (a folded op's, or a replayed one's, does not)."""
    from miltext.interpreter import evaluator
    calls = []
    real = evaluator.find

    def find(op_type):
        kernel = real(op_type)
        return None if kernel is None else lambda a: calls.append(op_type) or kernel(a)
    monkeypatch.setattr(evaluator, "find", find)
    return calls
