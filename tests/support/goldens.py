"""Golden files: expected outputs kept in the tree and compared with what the code makes now.

`UPDATE_GOLDENS=1 pytest tests/...` rewrites each golden file a test compares (only those that
differ), so that a deliberate change of output is one run and a reviewed diff; without it, a
difference fails the test and names the file."""
import os


def updating() -> bool:
    return os.environ.get("UPDATE_GOLDENS") == "1"


def compare(path, actual) -> None:
    """Assert the file at `path` holds `actual` (str: UTF-8 text with \\n line ends; bytes: as
    is); with UPDATE_GOLDENS=1, write `actual` there instead where it differs."""
    mode = "b" if isinstance(actual, bytes) else ""
    expected = None
    if os.path.exists(path):
        with open(path, "r" + mode, **({} if mode else {"encoding": "utf-8", "newline": ""})) as f:
            expected = f.read()
    if updating():
        if expected != actual:
            with open(path, "w" + mode, **({} if mode else {"encoding": "utf-8", "newline": ""})) as f:
                f.write(actual)
        return
    assert expected is not None, f"{path} is missing: UPDATE_GOLDENS=1 writes it"
    assert actual == expected, f"{path} is not what the code makes now: if the change is meant, " \
                               "UPDATE_GOLDENS=1 rewrites it (then review the diff)"
