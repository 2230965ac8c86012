"""An Alignment as text a reviewer knows: a unified diff of what really differs (context lines
in the new program's names), after a few `#` lines that sum it up: how many ops were added,
removed and changed, every rename on one line, and each changed weight in numbers."""
from __future__ import annotations

import re
from collections import Counter

from .align import ADDED, CHANGED, REMOVED, SAME

MAX_RENAME_GROUPS = 16   # renames shown on the one line; the rest are counted


def render(a_lines: list, b_lines: list, alignment, a_label: str, b_label: str, context: int = 3,
           weight_changes: list = ()) -> str:
    out = [f"--- {a_label}\n", f"+++ {b_label}\n"]
    summary = summary_text(a_lines, b_lines, alignment)
    if summary:
        out.append(f"# {summary}\n")
    if alignment.renames:
        out.append(f"# {renames_text(alignment.renames)}\n")
    out += [f"# {change.text()}\n" for change in weight_changes]
    for hunk in _hunks(alignment.steps, context):
        out += _hunk_text(hunk, a_lines, b_lines, alignment)
    return "".join(out)


def summary_text(a_lines: list, b_lines: list, alignment) -> str:
    """`4 ops added (linear, relu, 2 const), 1 changed (linear)`, lines that are no ops counted
    apart."""
    counts = {ADDED: Counter(), REMOVED: Counter(), CHANGED: Counter()}
    other = Counter()
    for step in alignment.steps:
        if step.tag == SAME:
            continue
        line = b_lines[step.b] if step.b is not None else a_lines[step.a]
        if line.op is None:
            other[step.tag] += 1
        else:
            counts[step.tag][line.op] += 1
    parts = []
    for tag in (ADDED, REMOVED, CHANGED):
        total = sum(counts[tag].values())
        if total:
            kinds = ", ".join(op if n == 1 else f"{n} {op}" for op, n in sorted(counts[tag].items(), key=lambda x: (-x[1], x[0])))
            parts.append(f"{total} op{'s' if total > 1 else ''} {tag} ({kinds})")
    for tag in (ADDED, REMOVED, CHANGED):
        if other[tag]:
            parts.append(f"{other[tag]} other line{'s' if other[tag] > 1 else ''} {tag}")
    return ", ".join(parts)


_NUMBER = re.compile(r"([0-9]+)")


def renames_text(renames: list) -> str:
    """Every rename on one line; names that differ by one number shifted alike are one entry:
    `%linear_[3-5]_cast_fp16 → %linear_[4-6]_cast_fp16`."""
    groups: dict = {}
    for old, new in renames:
        groups.setdefault(_pattern(old, new), []).append((old, new))
    entries = []
    for pattern, members in groups.items():
        if pattern is None or len(members) == 1:
            entries += [f"%{old} → %{new}" for old, new in members]
        else:
            parts, index, delta = pattern
            numbers = [int(_NUMBER.split(old)[index]) for old, _ in members]
            entries.append(f"%{_spell(parts, index, numbers)} → %{_spell(parts, index, [n + delta for n in numbers])}")
    shown = entries[:MAX_RENAME_GROUPS]
    more = f", and {len(entries) - len(shown)} more" if len(entries) > len(shown) else ""
    return f"{len(renames)} renamed: " + ", ".join(shown) + more


def _pattern(old: str, new: str):
    """(the parts of `old`, the index of its one number that differs, by how much), or None."""
    a, b = _NUMBER.split(old), _NUMBER.split(new)
    if len(a) != len(b):
        return None
    differ = [k for k in range(len(a)) if a[k] != b[k]]
    if len(differ) != 1 or differ[0] % 2 == 0 or a[differ[0]].startswith("0") or b[differ[0]].startswith("0"):
        return None
    k = differ[0]
    return tuple(a[:k] + ["#"] + a[k + 1:]), k, int(b[k]) - int(a[k])


def _spell(parts: tuple, index: int, numbers: list) -> str:
    ns = sorted(numbers)
    run = ns == list(range(ns[0], ns[0] + len(ns)))
    middle = f"[{ns[0]}-{ns[-1]}]" if run else "[" + ",".join(map(str, ns)) + "]"
    return "".join(parts[:index]) + middle + "".join(parts[index + 1:])


def _hunks(steps: list, context: int) -> list:
    """Runs of steps around the ones that differ, `context` same steps on each side."""
    hunks, start, end = [], None, None
    for k, step in enumerate(steps):
        if step.tag == SAME:
            continue
        lo, hi = max(0, k - context), min(len(steps), k + context + 1)
        if start is not None and lo <= end:
            end = hi
        else:
            if start is not None:
                hunks.append(steps[start:end])
            start, end = lo, hi
    if start is not None:
        hunks.append(steps[start:end])
    return hunks


def _hunk_text(hunk: list, a_lines, b_lines, alignment) -> list:
    a_at = [s.a for s in hunk if s.a is not None]
    b_at = [s.b for s in hunk if s.b is not None]
    out = [f"@@ -{_range(a_at)} +{_range(b_at)} @@\n"]
    for step in hunk:
        if step.tag == SAME:
            out.append(f" {b_lines[step.b].text}\n")
        elif step.tag == ADDED:
            out.append(f"+{b_lines[step.b].text}\n")
        elif step.tag == REMOVED:
            out.append(f"-{a_lines[step.a].text}\n")
        else:
            old, new = a_lines[step.a].text, b_lines[step.b].text
            blobs_a, blobs_b = alignment.blob_ids_a[step.a], alignment.blob_ids_b[step.b]
            if blobs_a != blobs_b:   # the same text may hold other weights: say which
                old += _digests(blobs_a)
                new += _digests(blobs_b)
            out += [f"-{old}\n", f"+{new}\n"]
    return out


def _digests(blobs: list) -> str:
    """`  # sha256:...` for a line's blobs; nothing for a line without one (an inline value)."""
    return "  # " + " ".join(f"sha256:{d}" for d in blobs) if blobs else ""


def _range(at: list) -> str:
    if not at:
        return "0,0"
    return f"{at[0] + 1},{len(at)}" if len(at) != 1 else str(at[0] + 1)
