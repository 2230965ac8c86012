"""How fast `miltext lsp` keeps up while a hand-written file is typed, over JSON-RPC (issue 29).

    python bench/lsp_typing.py [--baseline REV] [--reps N] [--text canonical|shorthand|1k]

The texts: the 10k-op model of bench/lsp_latency.py in miltext's canonical form (every output
typed and named), the same model in the shorthand (no output types, no names, small consts
inline: as people write it), and a 1k-line hand-written (shorthand) file. For each, the server
runs as a subprocess spoken to over stdio, as an editor does, and this measures, each as a
median and a worst case over the repetitions:

- edit       a one-line edit in the middle of the text to its diagnostics
- hover      a hover on a name some lines below the edit, sent right after the edit
- unclosed   the edited line left with an unclosed `(`, then six keys typed after it: each key
             to its diagnostics, and a hover after it
- half-op    the line's op type half typed (`= lin`): diagnostics, hover
- no-brace   the block's closing `}` deleted: diagnostics, hover
- rename-typing  keys typed into the name the edited line declares (`%x` -> `%x1` -> `%x12`, and
             back): its readers lose it, and did-you-mean changes; diagnostics, hover
- burst      20 keys 50 ms apart: the last key to the diagnostics of the final text
- outline    the document's symbols after an edit
- complete   a completion where an input's value goes (`relu(x=%`)

With --baseline REV, the server as it was at REV (its tree exported with git archive, see
lsp_latency.baseline_tree) runs the same steps in the same run. A benchmark: it never fails on a
number. Load average is printed with the figures (the machine may be shared).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from lsp_latency import OUT, ROOT, Server, baseline_tree, models  # noqa: E402

HAND_OPS = 1_870   # the transformer's ops whose shorthand is some 1,000 lines


def texts() -> dict[str, Path]:
    """canonical and shorthand 10k (weights beside them), and the 1k-line hand-written file."""
    import programs
    from verify import shorthand

    import miltext
    canonical = models()["mil"]
    short, hand = OUT / "short" / "model.mil", OUT / "hand" / "model.mil"
    if not short.exists():
        program = miltext.loads(canonical.read_text(encoding="utf-8"))
        shorthand(program)
        short.parent.mkdir(parents=True, exist_ok=True)
        short.write_text(miltext.dumps(program), encoding="utf-8")
        if not (short.parent / "weights").exists():
            shutil.copytree(canonical.parent / "weights", short.parent / "weights")
    if not hand.exists():
        program = programs.miltext_transformer(HAND_OPS)
        shorthand(program)
        hand.parent.mkdir(parents=True, exist_ok=True)
        hand.write_text(miltext.dumps(program), encoding="utf-8")
    return {"canonical": canonical, "shorthand": short, "1k": hand}


def op_line(lines: list[str], start: int, op: str | None = None) -> int:
    """The first line from `start` on that is an op with a `%var` input (of type `op`)."""
    for n in range(start, len(lines)):
        line = lines[n]
        if " = " in line and "(x=%" in line and "const(" not in line and (op is None or f"= {op}(" in line):
            return n
    raise SystemExit("no op line found")


def measure(command, env, cwd, path: Path, reps: int) -> dict:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    uri = path.as_uri()
    s = Server.started(command, env, cwd)
    version = 1
    sent = time.perf_counter()
    s.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "mil", "version": version, "text": text}}})
    at, _ = s.diagnostics(version)
    out: dict = {"open": [at - sent]}
    edit = op_line(lines, len(lines) // 2)
    use = op_line(lines, edit + 7)
    use_col = lines[use].index("(x=%") + 4
    doc = {"textDocument": {"uri": uri}}
    hover_at = {**doc, "position": {"line": use, "character": use_col}}
    s.request("textDocument/hover", hover_at)   # the first inference, as an editor's first hover
    current = lines[edit]

    def replace(n: int, new: str, old: str) -> float:
        nonlocal version
        version += 1
        rng = {"start": {"line": n, "character": 0}, "end": {"line": n, "character": len(old)}}
        s.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"range": rng, "text": new}]}})
        return time.perf_counter()

    def step(key: str, new: str) -> None:
        """The edited line made `new`: its diagnostics, then a hover below it."""
        nonlocal current
        sent = replace(edit, new, current)
        current = new
        at, _ = s.diagnostics(version)
        out.setdefault(key, []).append(at - sent)
        sent = time.perf_counter()
        at, _ = s.request("textDocument/hover", hover_at)
        out.setdefault(key + " hover", []).append(at - sent)

    original = lines[edit]
    paren = original.index("(") + 1
    for _ in range(reps):
        step("edit", original.replace("(", "( ", 1))       # a clean one-line edit
        step("edit", original)
        step("unclosed", original[:paren])                  # an unclosed `(`, then six keys
        for k in range(1, 7):
            step("unclosed", original[:paren] + "x=%abc"[:k])
        step("edit", original)
        step("half-op", original.split("=", 1)[0] + "= lin")
        step("edit", original)
        named = re.match(r"\s*%[\w.]+", original).end()
        for typed in ("1", "12", "1", ""):
            step("rename-typing", original[:named] + typed + original[named:])
    close = max(n for n, line in enumerate(lines) if line.strip().startswith("}") and "->" in line)
    for _ in range(reps):   # the block's `}` deleted, and put back
        sent = replace(close, lines[close].replace("}", "", 1), lines[close])
        at, _ = s.diagnostics(version)
        out.setdefault("no-brace", []).append(at - sent)
        sent = time.perf_counter()
        at, _ = s.request("textDocument/hover", hover_at)
        out.setdefault("no-brace hover", []).append(at - sent)
        replace(close, lines[close], lines[close].replace("}", "", 1))
        s.diagnostics(version)
    for _ in range(max(1, reps // 2)):   # 20 keys 50 ms apart into a name
        word = "keystroke_burst_typed"[:20]
        base = current
        at_col = base.index("%") + 2
        for i in range(len(word)):
            sent_last = replace(edit, base[:at_col] + word[:i + 1] + base[at_col:], current)
            current = base[:at_col] + word[:i + 1] + base[at_col:]
            time.sleep(0.05)
        at, _ = s.diagnostics(version)
        out.setdefault("burst", []).append(at - sent_last)
        replace(edit, base, current)
        current = base
        s.diagnostics(version)
    for _ in range(reps):
        step("edit", original.replace("(", "( ", 1))
        sent = time.perf_counter()
        at, _ = s.request("textDocument/documentSymbol", doc)
        out.setdefault("outline", []).append(at - sent)
        step("edit", original)
    call = original[:paren].rsplit("=", 1)[0] + "= relu(x=%"
    step("complete-line", call)
    for _ in range(reps):
        sent = time.perf_counter()
        at, answer = s.request("textDocument/completion", {**doc, "position": {"line": edit, "character": len(call)}})
        out.setdefault("complete", []).append(at - sent)
    out["complete items"] = [len(answer["items"]) if isinstance(answer, dict) else len(answer or [])]
    s.close()
    return out


ROWS = ["open", "edit", "edit hover", "unclosed", "unclosed hover", "half-op", "half-op hover", "no-brace",
        "no-brace hover", "rename-typing", "rename-typing hover", "burst", "outline", "complete", "complete items"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", help="a git revision whose server to measure too")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--text", choices=["canonical", "shorthand", "1k"], action="append")
    args = ap.parse_args()
    paths = texts()
    servers = {"now": ROOT}
    if args.baseline:
        servers[args.baseline] = baseline_tree(args.baseline)
    command = [sys.executable, "-c", "import sys; from miltext.cli import main; sys.exit(main(['lsp']))"]
    for name in args.text or list(paths):
        path = paths[name]
        print(f"== {name}: {path} ({path.read_text().count(chr(10)):,} lines)", flush=True)
        found = {}
        for server, tree in servers.items():
            found[server] = measure(command, {**os.environ, "PYTHONPATH": str(tree)}, str(tree), path, args.reps)
        print(f"   {'(ms: median / worst)':<18}" + "".join(f"{s:>22}" for s in servers))
        for row in ROWS:
            cells = []
            for server in servers:
                values = found[server].get(row, [])
                if not values:
                    cells.append(f"{'-':>22}")
                elif row == "complete items":
                    cells.append(f"{values[0]:>22}")
                else:
                    cells.append(f"{statistics.median(values) * 1e3:>12.0f} / {max(values) * 1e3:>7.0f}")
            print(f"   {row:<18}" + "".join(cells), flush=True)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
