"""How fast `miltext lsp` answers on a real 10k-line model, in both dialects, over JSON-RPC.

    python bench/lsp_latency.py [--baseline REV] [--reps N]

The model: the 10k-op transformer of bench/programs.py as coremltools' exporter writes a
converted model (weights in weights/weight.bin beside the text), printed once as miltext's MIL
and once as Apple's model.mil. For each, the server runs as a subprocess spoken to over stdio
(as an editor does) and this measures:

- open      didOpen to its diagnostics
- edit      a one-line edit (a letter typed into an op's name) to its diagnostics (median)
- hover / definition   on a %name in the middle of the document (median)
- outline / hints   the document's symbols, and the inlay hints of its first 200 lines (what an
            editor asks after each change; median)
- burst     20 keystrokes 50 ms apart: the last key to the diagnostics of the final text
- memory    the server's resident memory: idle (started and warmed up, before the open, in MB);
            its growth from then to after all of the above (and the outline asked once more
            after the burst), as a multiple of the text (what the document costs); and all of
            it as a multiple of the text (the interpreter and its modules, some 60 MB, included)

With --baseline REV, the server as it was at git revision REV runs the same steps in the same
run (its tree exported to a temporary folder), and the ratios old/new are printed. A benchmark,
not a test: it never fails on a number.
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from miltext.lsp.transport import frame, read_message  # noqa: E402 (after the path is set)

OUT = BENCH / "out" / "lsp"
OPS = 10_000


def models() -> dict[str, Path]:
    """The two texts of the converted 10k model, each in a folder with weights/ beside it."""
    import programs

    import miltext
    texts = {"mil": OUT / "mil" / "model.mil", "model.mil": OUT / "modelmil" / "model.mil"}
    if all(p.exists() for p in texts.values()):
        return texts
    weights = OUT / "weights"
    weights.mkdir(parents=True, exist_ok=True)
    pb, _ = programs.weights_in_a_file_proto(OPS, str(weights))
    program = miltext.Program.from_proto(pb)
    for dialect, path in texts.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(miltext.dumps(program, "modelmil" if dialect == "model.mil" else "mil"), encoding="utf-8")
        target = path.parent / "weights"
        if not target.exists():
            shutil.copytree(weights, target)
    return texts


class Server:
    """The server as a subprocess; requests, notifications and when each arrived."""

    def __init__(self, command: list[str], env=None, cwd=None):
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        self.inbox = queue.Queue()
        self.held = []  # notifications that arrived while waiting for a response
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    @classmethod
    def started(cls, command: list[str], env=None, cwd=None) -> Server:
        """A server past the LSP handshake (initialize, initialized), ready for documents."""
        s = cls(command, env, cwd)
        s.request("initialize", {"processId": os.getpid(), "rootUri": None, "capabilities": {}})
        s.send({"method": "initialized", "params": {}})
        # answered once `initialized` is handled (messages are handled in order): its warm-up
        # done, so that the idle memory is not read halfway through it
        s.request("textDocument/hover", {"textDocument": {"uri": "file:///not-open.mil"},
                                         "position": {"line": 0, "character": 0}})
        return s

    def _read(self):
        while (message := read_message(self.proc.stdout)) is not None:
            self.inbox.put((time.perf_counter(), message))

    def send(self, message: dict):
        self.proc.stdin.write(frame(message))
        self.proc.stdin.flush()

    def next(self, timeout=600):
        at, message = self.inbox.get(timeout=timeout)
        if "method" in message and "id" in message:  # a request from the server
            self.send({"id": message["id"], "result": None})
        return at, message

    def request(self, method, params):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            at, message = self.next()
            if message.get("id") == self.next_id and "method" not in message:
                return at, message.get("result")
            if "method" in message:
                self.held.append((at, message))

    def diagnostics(self, version=None, count=1):
        """When the diagnostics of `version` arrived (a server that does not say versions: the
        `count`th publish from now)."""
        seen = 0
        while True:
            at, message = self.held.pop(0) if self.held else self.next()
            if message.get("method") != "textDocument/publishDiagnostics":
                continue
            seen += 1
            v = message["params"].get("version")
            if (v is not None and v == version) or (v is None and seen >= count):
                return at, message["params"]["diagnostics"]

    def rss(self) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def idle_rss(self) -> int:
        """The memory once the server has settled (warmed up after `initialized`, done with
        the whole check after the typing stopped): unchanged over three readings 0.3 s apart,
        the first taken after the server's idle delay (0.6 s) so its whole check has begun (a
        single pause in a check that is still running would read too high)."""
        time.sleep(1.0)
        last, steady = self.rss(), 0
        for _ in range(100):
            time.sleep(0.3)
            now = self.rss()
            steady = steady + 1 if now == last else 0
            if steady == 3:
                break
            last = now
        return last

    def close(self):
        try:
            self.request("shutdown", None)
            self.send({"method": "exit"})
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()


def edit_place(lines: list[str], dialect: str) -> tuple[int, int]:
    """(line, column) inside the name string of an op in the middle of the text."""
    marker = '("' if dialect == "model.mil" else 'name="'
    for n in range(len(lines) // 2, len(lines)):
        i = lines[n].rfind(marker)
        if i >= 0 and ("= linear(" in lines[n] or "= matmul(" in lines[n]):
            return n, i + len(marker) + 1
    raise SystemExit("no op to edit found")


def use_place(lines: list[str], dialect: str) -> tuple[int, int]:
    """(line, column) of an input's var name on an op line in the middle of the text."""
    for n in range(len(lines) // 2 + 7, len(lines)):
        key = "x = " if dialect == "model.mil" else "x=%"
        i = lines[n].find(key)
        if i >= 0 and "= const" not in lines[n]:
            return n, i + len(key) + 1
    raise SystemExit("no use found")


def measure(command, env, cwd, path: Path, dialect: str, reps: int) -> dict:
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    uri = path.as_uri()
    s = Server.started(command, env, cwd)
    before = s.idle_rss()
    version = 1
    start = time.perf_counter()
    s.send({"method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "mil", "version": version, "text": text}}})
    at, diags = s.diagnostics(version)
    out = {"open": at - start, "open_diagnostics": len(diags)}
    line, column = edit_place(lines, dialect)

    def change(text_in: str, col: int, removing=False):
        nonlocal version
        version += 1
        rng = {"start": {"line": line, "character": col}, "end": {"line": line, "character": col + removing}}
        s.send({"method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": version}, "contentChanges": [{"range": rng, "text": text_in}]}})
        return time.perf_counter()

    edits = []
    for _ in range(reps):  # type a letter, then take it out: the text stays the same
        sent = change("q", column)
        at, _ = s.diagnostics(version)
        edits.append(at - sent)
        sent = change("", column, removing=True)
        at, _ = s.diagnostics(version)
        edits.append(at - sent)
    out["edit"] = statistics.median(edits)

    uline, ucol = use_place(lines, dialect)
    doc = {"textDocument": {"uri": uri}}
    pos = {**doc, "position": {"line": uline, "character": ucol}}
    hint_range = {"start": {"line": 0, "character": 0}, "end": {"line": 200, "character": 0}}
    for method, key, params in (("textDocument/hover", "hover", pos), ("textDocument/definition", "definition", pos),
                                ("textDocument/documentSymbol", "outline", doc),
                                ("textDocument/inlayHint", "hints", {**doc, "range": hint_range})):
        times = []
        for _ in range(reps):
            sent = time.perf_counter()
            at, answer = s.request(method, params)
            times.append(at - sent)
        out[key] = statistics.median(times)
        out[key + "_answered"] = answer is not None
    # A hover right after an edit, before its diagnostics: the server must catch up first.
    sent = change("q", column)
    at, answer = s.request("textDocument/hover", pos)
    out["hover_after_edit"] = at - sent
    s.diagnostics(version)
    change("", column, removing=True)
    s.diagnostics(version)

    word = "keystroke_burst_typed"[:20].ljust(20, "z")
    sent_last = None
    for i, ch in enumerate(word):
        sent_last = change(ch, column + i)
        time.sleep(0.05)
    at, _ = s.diagnostics(version, count=len(word))
    out["burst_last"] = at - sent_last
    time.sleep(1.0)  # the whole check the server runs once the typing stops
    s.request("textDocument/documentSymbol", doc)   # as an editor does after a change
    after = s.idle_rss()
    out["memory_idle_mb"] = before / 2**20
    out["memory_growth"] = (after - before) / len(text.encode())
    out["memory_total"] = after / len(text.encode())
    s.close()
    return out


def baseline_tree(rev: str) -> Path:
    """The source tree at `rev`, exported to a temporary folder, with this tree's built
    native extensions copied in."""
    folder = Path(tempfile.mkdtemp(prefix="miltext-baseline-"))
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    for so in (ROOT / "miltext").rglob("*.so"):
        target = folder / so.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(so, target)
    return folder


ROWS = [("open", "open (s)"), ("edit", "one-line edit -> diagnostics (s, median)"),
        ("hover", "hover (s, median)"), ("definition", "definition (s, median)"),
        ("outline", "outline: document symbols (s, median)"), ("hints", "inlay hints, 200 lines (s, median)"),
        ("hover_after_edit", "hover right after an edit (s)"),
        ("burst_last", "20 keys 50 ms apart: last key -> diagnostics (s)"),
        ("memory_idle_mb", "idle server, warmed up, before the open (MB)"),
        ("memory_growth", "memory growth from the idle server / text size"),
        ("memory_total", "server memory / text size")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", help="a git revision whose server to measure too")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--dialect", choices=["mil", "model.mil"], action="append")
    ap.add_argument("--json", help="write the figures to this file")
    args = ap.parse_args()
    texts = models()
    servers = {"now": (ROOT, None)}
    if args.baseline:
        servers[args.baseline] = (baseline_tree(args.baseline), None)
    results = {}
    for dialect in args.dialect or list(texts):
        path = texts[dialect]
        print(f"== {dialect}: {path} ({len(path.read_bytes()):,} bytes, "
              f"{path.read_text().count(chr(10)):,} lines)", flush=True)
        for name, (tree, _) in servers.items():
            env = {**os.environ, "PYTHONPATH": str(tree)}
            command = [sys.executable, "-c", "import sys; from miltext.cli import main; sys.exit(main(['lsp']))"]
            results[(dialect, name)] = r = measure(command, env, str(tree), path, dialect, args.reps)
            print(f"   {name}: " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                                             for k, v in r.items()), flush=True)
    print()
    for dialect in args.dialect or list(texts):
        print(f"{dialect}:")
        now = results[(dialect, "now")]
        for key, label in ROWS:
            row = f"  {label:<52} {now[key]:8.3f}"
            if args.baseline:
                old = results[(dialect, args.baseline)][key]
                row += f"   {args.baseline}: {old:8.3f}   ratio {old / now[key]:6.1f}x" if now[key] else ""
            print(row)
    if args.json:
        Path(args.json).write_text(json.dumps({f"{d}/{n}": r for (d, n), r in results.items()}, indent=2))


if __name__ == "__main__":
    main()
