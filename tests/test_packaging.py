"""The wheel carries every part of the package: pyproject's package list names each folder of
miltext/ that holds Python modules (a folder left out installs nowhere but in a checkout)."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_subpackage_is_in_the_wheel():
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        listed = set(re.findall(r'"(miltext[a-z_.]*)"', re.search(r"packages = \[(.*?)\]", f.read(), re.S).group(1)))
    found = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "miltext")):
        if "__pycache__" not in folder and any(f.endswith(".py") for f in files):
            found.add(os.path.relpath(folder, ROOT).replace(os.sep, "."))
    assert found - listed == set()
