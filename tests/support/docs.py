"""The fenced blocks of the Markdown docs, which tests hold to what miltext does."""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")

_FENCE = re.compile(r"^```([A-Za-z0-9_-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)
_MARK = re.compile(r"<!--[ \t]*([^\n]*?)[ \t]*-->\s*\Z")


def fenced_blocks(path: str) -> list:
    """(line, language, body, mark) for each fenced block; mark is the HTML comment right
    before the fence (blank lines aside), or ''."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    out = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()].rstrip()
        mark = _MARK.search(before)
        line = text.count("\n", 0, m.start()) + 1
        out.append((line, m.group(1), m.group(2), mark.group(1) if mark else ""))
    return out
