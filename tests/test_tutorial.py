"""docs/tutorial.md is run: its ```sh blocks (bash, in one temporary folder) and ```python
blocks (exec'd there, in one namespace) in order, and each block marked `<!-- output -->` is
exactly what the block before it printed.

The block marked `<!-- tutorial: torch -->` converts a torch model; the run builds the same
model from examples/mlp instead, so that the suite needs no torch. scripts/make_examples.py makes
examples/mlp from the same torch model (with torch installed, `python scripts/make_examples.py mlp`
rewrites it, and `git diff examples/` must show nothing).
"""
import contextlib
import io
import os
import shutil
import subprocess
import sys

import pytest

from support.docs import fenced_blocks

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TUTORIAL = os.path.join(ROOT, "docs", "tutorial.md")
EXAMPLE = os.path.join(ROOT, "examples", "mlp", "model.mil")
TORCH = "tutorial: torch"
RUNNABLE = ("sh", "python")


def steps() -> list[tuple]:
    """(line, language, body, mark, expected output or None) for each runnable block."""
    blocks = fenced_blocks(TUTORIAL)
    out = []
    for i, (line, lang, body, mark) in enumerate(blocks):
        if lang in RUNNABLE:
            following = blocks[i + 1] if i + 1 < len(blocks) else None
            expected = following[2] if following and following[3] == "output" else None
            out.append((line, lang, body, mark, expected))
        else:
            assert mark in ("", "output"), f"line {line}: unknown mark <!-- {mark} -->"
    return out


def environment(tmp_path) -> dict:
    """miltext of this Python on PATH; git with a fresh home, no system config, an author."""
    home = tmp_path / "home"
    home.mkdir()
    return dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
                HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), GIT_CONFIG_NOSYSTEM="1",
                GIT_AUTHOR_NAME="Tutorial", GIT_AUTHOR_EMAIL="tutorial@example.com",
                GIT_COMMITTER_NAME="Tutorial", GIT_COMMITTER_EMAIL="tutorial@example.com")


def run_python(body: str, namespace: dict) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(body, TUTORIAL, "exec"), namespace)
    return out.getvalue()


def run_sh(body: str, cwd, env) -> str:
    result = subprocess.run(["bash", "-e", "-c", body], cwd=cwd, env=env, capture_output=True, text=True)
    assert result.returncode == 0, f"{body}\n{result.stderr}"
    return result.stdout


def test_the_tutorial_has_its_steps():
    marks = [s[3] for s in steps()]
    assert marks.count(TORCH) == 1
    assert sum(s[4] is not None for s in steps()) >= 4


def test_the_tutorial_runs(tmp_path, monkeypatch):
    pytest.importorskip("coremltools")
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    work = tmp_path / "work"
    work.mkdir()
    env = environment(tmp_path)
    monkeypatch.chdir(work)
    namespace: dict = {"__name__": "__tutorial__"}
    for line, lang, body, mark, expected in steps():
        if mark == TORCH:
            body, lang = f"miltext build {EXAMPLE} -o MLP.mlpackage", "sh"
        output = run_sh(body, work, env) if lang == "sh" else run_python(body, namespace)
        if expected is not None:
            assert output == expected, f"docs/tutorial.md:{line}: the output shown is not the output"
