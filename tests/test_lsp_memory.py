"""What the language server keeps for a document, per byte of its text: an analysis of a
generated 3000-op model (after its whole check, a hover, references, the outline and an edit),
measured with tracemalloc, in both dialects. The object model of the program is most of it; the
bound leaves room for that and catches what would keep ordinary ops instead of compact ones, or
a copy of the names, places or text of each op, as the server once did. The text itself (the editor's copy) is not counted. Latency and resident memory are
bench/lsp_latency.py's."""
import gc
import tracemalloc

import pytest

import miltext
from miltext.lsp.analysis import Analysis, warm_up

LAYERS = 750   # four ops each
# Bytes kept per byte of text: today some 8.4 (mil) and 5.0 (model.mil, whose text is wordier),
# most of it the program in compact ops (miltext.ir.compact); with ordinary ops it was 16 and
# 12, and the server before keeping less was at 37 and 26.
BOUND = {"mil": 11, "modelmil": 7}


def model_text(dialect: str) -> str:
    lines = ["main[CoreML7](%x: (1, 8, fp32)) {", "  block0() {"]
    previous = "x"
    for i in range(LAYERS):
        bias = ", ".join(f"{(i * 8 + k) % 97 / 97 - 0.5:.6f}" for k in range(8))
        lines += [f'    %l{i}_bias: (8, fp32) = const(val=[{bias}], name="l{i}_bias")',
                  f'    %l{i}_axes: (1, int32) = const(val=[-1], name="l{i}_axes")',
                  f'    %l{i}_sum: (1, 8, fp32) = add(x=%{previous}, y=%l{i}_bias, name="l{i}_sum")',
                  f'    %l{i}_out: (1, 8, fp32) = relu(x=%l{i}_sum, name="l{i}_out")']
        previous = f"l{i}_out"
    lines += [f"  }} -> (%{previous})", "}", ""]
    text = "\n".join(lines)
    return text if dialect == "mil" else miltext.dumps(miltext.loads(text), "modelmil")


@pytest.mark.parametrize("dialect", ["mil", "modelmil"])
def test_an_analysis_keeps_a_few_times_its_text(dialect):
    warm_up()
    text = model_text(dialect)
    lines = text.split("\n")
    middle = len(lines) // 2
    column = lines[middle].index("l") + 1
    edited = "\n".join(lines[:middle] + [lines[middle].replace('"', '"q', 1)] + lines[middle + 1:])
    gc.collect()
    tracemalloc.start()
    try:
        a = Analysis(text)
        assert not a.findings(complete=True)
        assert a.hover((middle, column)) and a.references((middle, column)) and a.outline
        a = Analysis(edited, a)
        a.findings()
        gc.collect()
        # Not counted: a block of a MB or more, which no part of an analysis of this text
        # needs; the process's table of interned names, which the parsers add to, is one when
        # it doubles, in whichever test happens to fill it.
        kept = sum(t.size for t in tracemalloc.take_snapshot().traces if t.size < 1 << 20)
    finally:
        tracemalloc.stop()
    assert a.program is not None and len(a.reading.pieces) == 4 * LAYERS
    assert kept / len(text) < BOUND[dialect], f"{kept / len(text):.1f} bytes kept per byte of text, {kept / (4 * LAYERS):.0f} per op"


def _started_with(env: dict) -> list[str]:
    """The environment of `miltext lsp` once it answers `initialize`, started with `env`."""
    import os
    import subprocess
    import sys

    from miltext.lsp.transport import frame, read_message
    proc = subprocess.Popen([sys.executable, "-m", "miltext.cli", "lsp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        proc.stdin.write(frame({"id": 1, "method": "initialize",
                                "params": {"processId": os.getpid(), "rootUri": None, "capabilities": {}}}))
        proc.stdin.flush()
        answer = read_message(proc.stdout)   # the editor's pipes carry on into the new process
        assert answer is not None and answer.get("id") == 1 and "capabilities" in answer["result"]
        with open(f"/proc/{proc.pid}/environ", "rb") as f:
            return f.read().decode().split("\0")
    finally:
        proc.kill()
        proc.wait()


def test_the_server_runs_on_the_c_librarys_allocator():
    """On glibc the server starts again with PYTHONMALLOC=malloc (see miltext.lsp.allocator);
    an allocator the user chose stays."""
    import os
    import sys

    from miltext.lsp.allocator import _glibc
    if not sys.platform.startswith("linux"):
        pytest.fail("this test reads /proc: run it on Linux, as CI does", pytrace=False)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONMALLOC"}
    assert ("PYTHONMALLOC=malloc" in _started_with(env)) == (_glibc() is not None)
    assert "PYTHONMALLOC=pymalloc" in _started_with({**env, "PYTHONMALLOC": "pymalloc"})


def test_the_outline_json_of_each_op_is_kept_only_until_forgotten():
    """While an editor asks for the outline after each edit, each op's JSON is kept (twice the
    text); once the asking stops, the server forgets it and keeps only what is slow to find."""
    text = model_text("mil")
    a = Analysis(text)
    written = a.outline_json()
    assert sum(len(p.outline[6]) for p in a.reading.pieces) > 0.9 * len(written) > len(text)
    a.outlines.forget()
    assert all(len(p.outline) == 5 for p in a.reading.pieces)   # the places and the op's type
    assert a.outline_json() == written and all(len(p.outline) == 5 for p in a.reading.pieces)
    edited = Analysis(text.replace("relu(x=%l7_sum", "relu( x=%l7_sum"), a)
    assert edited.outline_json() == Analysis(edited.source.text).outline_json()
