"""Programs as Graphviz graphs: an op per node, a var per edge, consts folded into the ops that
use them (a const that changed is a node of its own). `change_dot` draws two aligned programs
in one picture: added ops green, removed red, changed orange, wiring that is new green and gone
red dashed, and each run of unchanged ops more than CONTEXT ops away from a change folded into
one node, so that a large model stays legible."""
from __future__ import annotations

import re
import shutil
import subprocess

from .align import ADDED, CHANGED, REMOVED, SAME, Step

CONTEXT = 3      # unchanged ops drawn on each side of a change
MAX_CONSTS = 4   # folded consts listed in an op's label
COLOURS = {ADDED: "#c8f0c8", REMOVED: "#f6c6c6", CHANGED: "#ffe0a0", SAME: "white"}
EDGE_COLOURS = {"new": 'color="#2a9d2a"', "gone": 'color="#d03030", style=dashed', "both": ""}


def program_dot(side) -> str:
    """The DOT text of one program (a review.Side)."""
    steps = [Step(SAME, None, k) for k in range(len(side.lines))]
    return _dot(_Drawing(steps, None, side.lines, collapse=False))


def change_dot(change, context: int = CONTEXT) -> str:
    """The DOT text of two aligned programs (a review.Change)."""
    return _dot(_Drawing(change.alignment.steps, change.a.lines, change.b.lines, collapse=True, context=context))


def svg(dot_text: str, timeout: float) -> bytes:
    """The picture as SVG, drawn by Graphviz's `dot` (None when it is not installed); a
    RuntimeError when it fails or is still drawing after `timeout` seconds (then it is stopped:
    its layout time grows much faster than the graph)."""
    dot = shutil.which("dot")
    if dot is None:
        return None
    try:
        result = subprocess.run([dot, "-Tsvg"], input=dot_text.encode("utf-8"), capture_output=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"dot was still drawing after {timeout:g} s and was stopped (write a .dot "
                           "file instead, or give more --timeout)") from None
    if result.returncode != 0:
        raise RuntimeError(f"dot failed: {result.stderr.decode('utf-8', 'replace').strip()}")
    return result.stdout


def node_count(dot_text: str) -> int:
    """The nodes of a graph this module drew (one line each: its labels are escaped)."""
    return sum(1 for line in dot_text.split("\n") if line.startswith("  ") and " [label=" in line)


class _Drawing:
    """Nodes and edges of aligned lines (one program: every step SAME, no old lines)."""

    def __init__(self, steps, a_lines, b_lines, collapse: bool, context: int = CONTEXT):
        self.steps, self.a_lines, self.b_lines = steps, a_lines, b_lines
        self.node_of = {}          # step index -> node id
        self.labels = {}           # node id -> (label, fill)
        step_of_a = {s.a: k for k, s in enumerate(steps) if s.a is not None}
        step_of_b = {s.b: k for k, s in enumerate(steps) if s.b is not None}
        self.section_a, self.section_b = _model_section(a_lines or []), _model_section(b_lines)
        self.consts_a, self.consts_b = _const_types(a_lines or []), _const_types(b_lines)
        drawn = [k for k, s in enumerate(steps) if self._is_node(s)]
        for k in drawn:   # a const drawn as a node of its own is not folded into its users too
            if self._line(steps[k]).op == "const":
                for names, lines, at in ((self.consts_a, a_lines, steps[k].a), (self.consts_b, b_lines, steps[k].b)):
                    for name in lines[at].defs if at is not None else ():
                        names.pop(name, None)
        for k in drawn:
            self.node_of[k] = f"n{k}"
        if collapse:
            self._collapse(drawn, context)
        edges = {}
        for lines, step_of, side in ((b_lines, step_of_b, "new"), (a_lines, step_of_a, "gone")):
            if lines is None:
                continue
            for (src, dst) in _wires(lines):
                s, d = self.node_of.get(step_of[src]), self.node_of.get(step_of[dst])
                if s is None or d is None or s == d:
                    continue
                edges[(s, d)] = "both" if edges.get((s, d), side) != side else side
        if a_lines is None:
            edges = {e: "both" for e in edges}
        self.edges = edges
        for k in drawn:
            node = self.node_of[k]
            if node not in self.labels:
                self.labels[node] = (self._label(steps[k]), COLOURS[steps[k].tag])

    def _line(self, step):
        return self.b_lines[step.b] if step.b is not None else self.a_lines[step.a]

    def _is_node(self, step) -> bool:
        """Ops (a const only when it changed), inputs, and a function's outputs."""
        line = self._line(step)
        if (step.b if step.b is not None else step.a) in (self.section_b if step.b is not None else self.section_a):
            return False
        if line.op == "const":
            return step.tag != SAME
        return line.op is not None or bool(line.defs) or (line.text.startswith("  } ->") and bool(line.uses))

    def _label(self, step) -> str:
        line = self._line(step)
        names = ", ".join("%" + d for d in line.defs)
        if line.op is not None:
            consts = self.consts_b if step.b is not None else self.consts_a
            folded = [f"const {consts[u]}" for u in line.uses if u in consts][:MAX_CONSTS]
            return "\n".join(filter(None, [line.op, names, *folded]))
        if line.defs:
            return names
        return "outputs\n" + ", ".join("%" + u for u in line.uses)

    def _collapse(self, drawn: list, context: int) -> None:
        """Runs of unchanged nodes far from every change become one node each."""
        changed = [i for i, k in enumerate(drawn) if self.steps[k].tag != SAME]
        near = set()
        for i in changed:
            near.update(range(max(0, i - context), min(len(drawn), i + context + 1)))
        run = []
        for i, k in enumerate(drawn + [None]):
            if k is not None and i not in near and self.steps[k].tag == SAME:
                run.append(k)
                continue
            if len(run) > 1:
                node = f"c{run[0]}"
                for j in run:
                    self.node_of[j] = node
                self.labels[node] = (f"{len(run)} unchanged ops", "#eeeeee")
            run = []


def _model_section(lines) -> set:
    """The lines of the model section (`model(...) { ... }` before the program)."""
    if not lines or not lines[0].text.startswith("model("):
        return set()
    for index, line in enumerate(lines):
        if line.text == "}":
            return set(range(index + 1))
    return set(range(len(lines)))


def _const_types(lines) -> dict:
    """The type of each const's output, as the text spells it."""
    return {line.defs[0]: line.text.split(": ", 1)[1].split(" = ", 1)[0]
            for line in lines if line.op == "const" and len(line.defs) == 1 and ": " in line.text}


def _wires(lines) -> list:
    """(defining line, using line) for every use of an op's or input's output; a nested block's
    outputs go to the op that owns the block."""
    defined, owners, wires = {}, [], []
    section = _model_section(lines)
    for index, line in enumerate(lines):
        if index in section:
            continue
        indent = len(line.text) - len(line.text.lstrip(" "))
        while owners and owners[-1][0] >= indent:
            owners.pop()
        target = index
        if line.op is None and line.text.lstrip().startswith("} ->") and owners:
            target = owners[-1][1]
        for u in line.uses:
            if u in defined:
                wires.append((defined[u], target))
        if line.op is not None:
            owners.append((indent, index))
        for d in line.defs:
            defined.setdefault(d, index)
    return wires


def _dot(drawing: _Drawing) -> str:
    out = ["digraph program {", '  rankdir=TB;', '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
           '  edge [color="#555555", arrowsize=0.6];']
    for node, (label, fill) in drawing.labels.items():
        out.append(f'  {node} [label="{_escape(label)}", fillcolor="{fill}"];')
    for (src, dst), kind in drawing.edges.items():
        style = EDGE_COLOURS[kind]
        out.append(f"  {src} -> {dst}" + (f" [{style}]" if style else "") + ";")
    out.append("}")
    return "\n".join(out) + "\n"


def _escape(text: str) -> str:
    """`text` as the inside of a DOT string: a line break as DOT's, and any other character that
    is invisible, breaks a line or has no place in the SVG's XML (controls, lone surrogates,
    U+2028) written as `\\u` and its code, as the MIL text writes it."""
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return _UNSHOWABLE.sub(lambda m: f"\\\\u{ord(m.group()):04x}", text)


_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufffe\uffff]")
