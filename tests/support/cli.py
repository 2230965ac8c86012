"""The `miltext` command as a user runs it: a subprocess in a folder of the test's."""
import os
import subprocess
import sys

from .corpus import CORPUS


def run(*args, cwd, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "miltext.cli", *args], cwd=cwd, capture_output=True,
                          text=True, encoding="utf-8", timeout=120, **kwargs)


def corpus_path(name: str, suffix: str = ".pb") -> str:
    return os.path.join(CORPUS, name + suffix)
