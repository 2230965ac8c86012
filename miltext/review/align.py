"""Two programs' lines aligned by structure, not by name.

1. Each line gets a key that leaves its own names out: its template, the blobs' contents, and
   for each name it uses, what defines that name: a const by its value (so a weight is known
   by its content wherever it sits), an op by its type, an input by its name.
2. The two key sequences are aligned as difflib aligns lines (longest matching blocks, so a
   unique line such as a weight anchors its neighbours).
3. Within each stretch left unaligned, lines are paired by op name, then in order by op type:
   those are the ops that changed, rather than one removed and another added.
4. The pairs map the old program's names to the new one's, in the old text's order (a name may
   be defined again). A pair is the same when its old line, with the names defined before it
   mapped, is its new line (with the same blob contents); else it changed.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass

SAME, CHANGED, ADDED, REMOVED = "same", "changed", "added", "removed"


@dataclass(slots=True)
class Step:
    tag: str
    a: int | None   # the line in the old text
    b: int | None   # the line in the new text


@dataclass
class Alignment:
    steps: list          # Steps in the order the new text reads, removed lines where they were
    renames: list        # (old name, new name) of the names the aligned lines define, in order
    blob_ids_a: list     # per line, the contents of its blobs
    blob_ids_b: list

    @property
    def differs(self) -> bool:
        return bool(self.renames) or any(s.tag != SAME for s in self.steps)


def align(a_lines: list, b_lines: list, a_digests, b_digests) -> Alignment:
    blobs_a = [tuple(a_digests.digest(b) for b in line.blobs) for line in a_lines]
    blobs_b = [tuple(b_digests.digest(b) for b in line.blobs) for line in b_lines]
    keys_a, keys_b = _keys(a_lines, blobs_a), _keys(b_lines, blobs_b)
    matcher = difflib.SequenceMatcher(None, keys_a, keys_b)
    pairs, regions = [], []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            pairs.append([(i1 + k, j1 + k) for k in range(i2 - i1)])
        else:
            pairs.append(_pair_region(a_lines, b_lines, i1, i2, j1, j2))
        regions.append((i1, i2, j1, j2))
    partner = {i: j for region in pairs for i, j in region}
    names, renames, same = {}, {}, set()
    for i in sorted(partner):   # in the old text's order, so that a use sees the names defined before it
        j = partner[i]
        if _same(a_lines[i], b_lines[j], blobs_a[i], blobs_b[j], names):
            same.add(i)
        for old, new in zip(a_lines[i].defs, b_lines[j].defs):
            names[old] = new
            if old != new:
                renames[(old, new)] = None
    steps = []
    for (i1, i2, j1, j2), region in zip(regions, pairs):
        steps += _steps(region, i1, i2, j1, j2, same)
    return Alignment(steps, list(renames), blobs_a, blobs_b)


def _keys(lines: list, blob_ids: list) -> list:
    defined = {}   # name -> what defines it
    keys = []
    for line, blobs in zip(lines, blob_ids):
        uses = tuple(defined.get(u, "%" + u) for u in line.uses)
        if line.op is None:      # a header, a declaration or a block's end: its own names count
            key = (line.template, tuple(line.defs), uses, blobs)
        else:
            key = (line.template, uses, blobs)
        for index, name in enumerate(line.defs):
            if line.op == "const":
                defined[name] = key
            elif line.op is not None:
                defined[name] = (line.op, index)
            else:
                defined[name] = "%" + name
        keys.append(key)
    return keys


def _pair_region(a_lines, b_lines, i1, i2, j1, j2) -> list:
    """Pairs of lines, one of each side, that are one line changed: same op name first, then
    the rest in order by op type (or template, for lines that are no ops)."""
    pairs = []
    by_name = {}
    for j in range(j1, j2):
        if b_lines[j].name is not None:
            by_name.setdefault(b_lines[j].name, j)
    taken_a, taken_b = set(), set()
    for i in range(i1, i2):
        j = by_name.get(a_lines[i].name) if a_lines[i].name is not None else None
        if j is not None and j not in taken_b:
            pairs.append((i, j))
            taken_a.add(i)
            taken_b.add(j)
    rest_a = [i for i in range(i1, i2) if i not in taken_a]
    rest_b = [j for j in range(j1, j2) if j not in taken_b]
    kind = lambda line: line.op or line.template  # noqa: E731
    # autojunk as difflib's: in a long stretch, a type on more than 1% of lines anchors nothing
    # (else thousands of consts make this quadratic)
    matcher = difflib.SequenceMatcher(None, [kind(a_lines[i]) for i in rest_a], [kind(b_lines[j]) for j in rest_b])
    for block in matcher.get_matching_blocks():
        pairs += [(rest_a[block.a + k], rest_b[block.b + k]) for k in range(block.size)]
    return sorted(pairs, key=lambda p: p[1])


def _same(a, b, blobs_a, blobs_b, names: dict) -> bool:
    return a.template == b.template and blobs_a == blobs_b and [names.get(u, u) for u in a.uses] == b.uses


def _steps(pairs: list, i1, i2, j1, j2, same: set) -> list:
    """The region's lines in the new text's order, each removed line just before the first
    line that follows it in the old text."""
    partner = dict((j, i) for i, j in pairs)
    steps, next_a = [], i1
    paired_a = {i for i, _ in pairs}
    for j in range(j1, j2):
        i = partner.get(j)
        if i is None:
            steps.append(Step(ADDED, None, j))
            continue
        while next_a < i:
            if next_a not in paired_a:
                steps.append(Step(REMOVED, next_a, None))
            next_a += 1
        steps.append(Step(SAME if i in same else CHANGED, i, j))
        next_a = max(next_a, i + 1)
    steps += [Step(REMOVED, i, None) for i in range(next_a, i2) if i not in paired_a]
    return steps
