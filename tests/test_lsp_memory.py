"""What the language server keeps for a document, per byte of its text: an analysis of a
generated 3000-op model (after its whole check, a hover, references, the outline and an edit),
measured with tracemalloc, in both dialects. The object model of the program is most of it; the
bound leaves room for that and catches what would keep a copy of the names, places or text of
each op, as the server once did. The text itself (the editor's copy) is not counted. Latency and resident memory are
bench/lsp_latency.py's."""
import gc
import tracemalloc

import pytest

import miltext
from miltext.lsp.analysis import Analysis, warm_up

LAYERS = 750   # four ops each
# Bytes kept per byte of text: today some 16 (mil) and 12 (model.mil, whose text is wordier),
# 13 and 10 of them the object model; the server before keeping less was at 37 and 26.
BOUND = {"mil": 22, "modelmil": 17}


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
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert a.program is not None and len(a.reading.pieces) == 4 * LAYERS
    assert kept / len(text) < BOUND[dialect], f"{kept / len(text):.1f} bytes kept per byte of text, {kept / (4 * LAYERS):.0f} per op"
