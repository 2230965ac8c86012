"""The optional extras a test may need."""
import pytest


def needs_coremltools(why: str) -> None:
    """Skip the calling test, saying why, where coremltools (the `coremltools` extra, which
    `make test` installs) is not installed."""
    import importlib.util
    if importlib.util.find_spec("coremltools") is None:
        pytest.skip(f"coremltools is not installed (pip install -e '.[coremltools]'): {why}")
