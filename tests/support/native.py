"""The native fast paths (miltext.native): a built extension, checked against the Python path."""
import pytest


def require_native(module: str):
    """The native extension `module` (e.g. "miltext.text.mil._fastprint"). `make test` builds it
    (pip install -e .); a missing build fails the test module instead of skipping it."""
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as e:
        pytest.fail(f"{module} is not built ({e}): install the package with a C compiler "
                    "(`make test` or `pip install -e .`) so the extension is compiled", pytrace=False)


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
