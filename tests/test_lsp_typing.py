"""The language server while a hand-written (shorthand) file is typed, over JSON-RPC: the types
hover and inlay hints show after a sequence of edits (a shape changed, lines broken and
mended, an op half typed, a `}` deleted, lines added and taken out) are those of a fresh
analysis of the final text, and those whole-program inference gives; a broken line is one error
and the rest keeps its types; completion of names is ranked and capped."""
import json
import re

import miltext
from miltext.infer import infer
from support.lsp import at, change, doc, open_text, request_at
from support.texts import MODELMIL

LAYERS = 12


def shorthand() -> str:
    """A chain whose types change along it (reshape, transpose, matmul), written as people do."""
    lines = ["main[CoreML7](%x: (1, 4, 8, fp32)) {", "  block0() {", "    %h0 = relu(x=%x)"]
    for i in range(LAYERS):
        lines += [f"    %s{i} = reshape(x=%h{i}, shape=[1, 4, 2, 4])",
                  f"    %t{i} = transpose(x=%s{i}, perm=[0, 2, 1, 3])",
                  f"    %m{i} = matmul(x=%t{i}, y=%t{i}, transpose_y=true)",
                  f"    %p{i} = softmax(x=%m{i}, axis=-1)",
                  f"    %c{i} = matmul(x=%p{i}, y=%t{i})",
                  f"    %h{i + 1} = reshape(x=%c{i}, shape=[1, 4, 8])"]
    lines += [f"  }} -> (%h{LAYERS})", "}", ""]
    return "\n".join(lines)


def hints(client, uri, text):
    found = client.request("textDocument/inlayHint", {**doc(uri), "range": {
        "start": at(0, 0), "end": at(len(text.split("\n")), 0)}})
    return [(h["position"]["line"], h["label"]) for h in found]


def hovers(client, uri, text):
    """The hover on each output declared in the text (its type, inferred or written)."""
    out = []
    for n, line in enumerate(text.split("\n")):
        m = re.match(r"\s*(%\w+)", line)
        if m and " = " in line:
            found = request_at(client, "textDocument/hover", uri, n, m.start(1) + 1)
            out.append((n, found["contents"]["value"] if found else None))
    return out


def truth(text) -> list:
    """(line, label) of each untyped output as whole-program inference types it."""
    program = miltext.loads(text)
    infer(program, use_coremltools=False)
    lines = text.split("\n")
    out = []
    for op in program.functions["main"].block.operations:
        v = op.outputs[0]
        n = next(i for i, line in enumerate(lines) if line.strip().startswith(f"%{v.name} = "))
        out.append((n, _label(v)))
    return out


def _label(v) -> str:
    from miltext.text.mil import printer
    return printer.var_decl(v)[len(f"%{v.name}"):]


def edits(text: str):
    """The states typing goes through, each from the one before, ending clean."""
    lines = text.split("\n")
    mid = next(n for n, line in enumerate(lines) if line.strip().startswith("%h6 = "))
    line = lines[mid]
    paren = line.index("(") + 1

    def at_mid(new: str) -> str:
        lines[mid] = new
        return "\n".join(lines)

    yield at_mid(line.replace("[1, 4, 8]", "[1, 32]"))            # a type change that flows down
    yield at_mid(line[:paren])                                     # an unclosed `(`
    for k in range(1, 6):
        yield at_mid(line[:paren] + "x=%c5, "[:k])                 # keys typed after it
    yield at_mid(line.split("=", 1)[0] + "= resh")                 # the op half typed
    yield at_mid(line)
    close = lines.index("  } -> (%h12)")
    lines[close] = "   -> (%h12)"                                  # the block's `}` deleted
    yield "\n".join(lines)
    lines[close] = "  } -> (%h12)"
    lines.insert(mid, "    %extra = relu(x=%h5)")                  # a line added above
    mid += 1
    yield "\n".join(lines)
    del lines[mid - 1]                                             # and taken out
    mid -= 1
    yield at_mid(line.replace("[1, 4, 8]", "[4, 8]"))


def test_types_after_edits_are_those_of_a_fresh_analysis(client):
    text = shorthand()
    uri = "file:///typing.mil"
    assert open_text(client, uri, text) == []
    assert hints(client, uri, text) == truth(text)
    for version, typed in enumerate(edits(text), start=2):
        change(client, uri, version, typed)
        hints(client, uri, typed)
        hovers(client, uri, typed)
    text = typed
    fresh = "file:///typing-fresh.mil"
    assert open_text(client, fresh, text) == []
    assert hints(client, uri, text) == hints(client, fresh, text) == truth(text)
    assert hovers(client, uri, text) == hovers(client, fresh, text)
    assert any("(4, 8, fp32)" in label for _, label in hints(client, uri, text))   # the last edit's


def test_a_broken_line_is_one_error_and_the_rest_keeps_its_types(client):
    text = shorthand()
    uri = "file:///broken.mil"
    open_text(client, uri, text)
    before = hints(client, uri, text)
    lines = text.split("\n")
    mid = next(n for n, line in enumerate(lines) if line.strip().startswith("%h6 = "))
    paren = lines[mid].index("(") + 1
    for version, new in enumerate((lines[mid][:paren], lines[mid][:paren] + "x=%c", "    %h6 = resh"), start=2):
        broken = "\n".join(lines[:mid] + [new] + lines[mid + 1:])
        diagnostics = change(client, uri, version, broken)
        assert len(diagnostics) == 1 and diagnostics[0]["range"]["start"]["line"] == mid, diagnostics
        # the lines after it keep the types they had: h6's last good type flows on
        assert [h for h in hints(client, uri, broken) if h[0] != mid] == [h for h in before if h[0] != mid]


def test_a_deleted_brace_is_one_error_and_the_rest_keeps_its_tools(client):
    text = shorthand()
    uri = "file:///brace.mil"
    open_text(client, uri, text)
    before = hints(client, uri, text)
    symbols = client.request("textDocument/documentSymbol", doc(uri))
    lines = text.split("\n")
    close = lines.index("  } -> (%h12)")
    broken = "\n".join(lines[:close] + ["   -> (%h12)"] + lines[close + 1:])
    diagnostics = change(client, uri, 2, broken)
    assert [d["range"]["start"]["line"] for d in diagnostics] == [close], diagnostics
    assert hints(client, uri, broken) == before
    ops = symbols[0]["children"][0]["children"]   # the ops' symbols stand (the block's end is not there)
    assert client.request("textDocument/documentSymbol", doc(uri))[0]["children"][0]["children"] == ops
    assert request_at(client, "textDocument/definition", uri, 4, 23)["range"]["start"] == at(3, 4)   # %s0
    assert change(client, uri, 3, text) == []


def test_model_mil_after_edits_is_a_fresh_analysis(client):
    """model.mil writes every type: hover after edits shows what a fresh analysis does."""
    uri = "file:///typing.model.mil"
    text = MODELMIL
    open_text(client, uri, text)
    line = text.split("\n")[5]
    for version, new in enumerate((line.replace("add(", "add("[:2]), line.replace("x)", ""), line), start=2):
        text = MODELMIL.replace(line, new)
        change(client, uri, version, text)
    open_text(client, "file:///typing-fresh.model.mil", text)
    for n in (4, 5):
        assert request_at(client, "textDocument/hover", uri, n, 34) == \
            request_at(client, "textDocument/hover", "file:///typing-fresh.model.mil", n, 34)
    assert hints(client, uri, text) == []


def test_completion_of_names_is_ranked_and_capped(client):
    lines = ["main[CoreML7](%x: (1, 8, fp32)) {", "  block0() {"]
    lines += [f"    %n{i} = relu(x=%{'x' if i == 0 else f'n{i - 1}'})" for i in range(300)]
    lines += ["    %y = relu(x=%", "  } -> (%n299)", "}", ""]
    text = "\n".join(lines)
    uri = "file:///many.mil"
    open_text(client, uri, text)
    found = request_at(client, "textDocument/completion", uri, 302, len("    %y = relu(x=%"))
    assert found["isIncomplete"] is True and len(found["items"]) == 100
    assert [i["label"] for i in found["items"][:3]] == ["%n299", "%n298", "%n297"]   # nearest first
    typed = request_at(client, "textDocument/completion", uri, 302, len("    %y = relu(x=%"))
    assert typed == found
    few = "\n".join(lines[:302] + ["    %y = relu(x=%n29"] + lines[303:])
    change(client, uri, 2, few)
    found = request_at(client, "textDocument/completion", uri, 302, len("    %y = relu(x=%n29"))
    assert found["isIncomplete"] is False
    assert sorted(i["label"] for i in found["items"]) == sorted(["%n29"] + [f"%n29{k}" for k in range(10)])


def test_outline_after_edits_is_that_of_a_fresh_text(client):
    """The outline is kept op by op (as JSON): after edits that change an op, add and take out
    lines above others and write a comment between two ops, it is a fresh text's."""
    text = shorthand()
    uri = "file:///outline.mil"
    open_text(client, uri, text)
    first = client.request("textDocument/documentSymbol", doc(uri))
    assert [c["name"] for c in first[0]["children"][0]["children"][:3]] == ["%h0", "%s0", "%t0"]
    lines = text.split("\n")
    steps = [lines[:5] + ["    %t0 = transpose(x=%s0, perm=[0, 1, 2, 3])"] + lines[6:]]
    steps.append(steps[-1][:3] + ["", "    # a comment"] + steps[-1][3:])
    steps.append(steps[-1][:6] + ["    # between two ops"] + steps[-1][6:])
    steps.append(steps[-1][:3] + steps[-1][5:])
    for version, step in enumerate(steps, start=2):
        change(client, uri, version, "\n".join(step))
        client.request("textDocument/documentSymbol", doc(uri))
    fresh = "file:///outline-fresh.mil"
    open_text(client, fresh, "\n".join(steps[-1]))
    assert client.request("textDocument/documentSymbol", doc(uri)) == client.request("textDocument/documentSymbol", doc(fresh))


WIDE = """main[CoreML7](%x: (1, 4, fp32)) {
  block0() {
    %"naïve😀" = relu(x=%x)   # ünïcode 😀
    %b = relu(x=%"naïve😀", name="é😀")
    %c = relu(x=%b)  # 😀😀
  } -> (%c)
}
"""


def utf16_outline(text: str) -> list:
    """The outline of `text` worked out afresh in the server's own terms (code points), its
    columns counted in UTF-16 units, as LSP's DocumentSymbol JSON."""
    from miltext.lsp.analysis import Analysis
    from miltext.lsp.outline import KINDS
    lines = text.split("\n")

    def place(pos):
        return at(pos[0], len(lines[pos[0]][:pos[1]].encode("utf-16-le")) // 2)

    def symbol(s):
        out = {"name": s.name, "kind": KINDS[s.kind], "range": {"start": place(s.range[0]), "end": place(s.range[1])},
               "selectionRange": {"start": place(s.selection[0]), "end": place(s.selection[1])}, "detail": s.detail}
        if s.children or s.kind != "op":
            out["children"] = [symbol(c) for c in s.children]
        return out
    return [symbol(s) for s in Analysis(text).outline]


def test_outline_of_a_text_beyond_ascii_counts_utf16(client):
    """Names, strings and comments outside ASCII: the outline (written from what each op piece
    keeps) has its columns in UTF-16 units, after edits as in a fresh text."""
    uri = "file:///wide.mil"
    assert [d["code"] for d in open_text(client, uri, WIDE)] == ["unusual-name"]
    (main,) = found = client.request("textDocument/documentSymbol", doc(uri))
    first, second, third = main["children"][0]["children"]
    line = WIDE.split("\n")[2]
    assert first["name"] == '%"naïve😀"' and first["selectionRange"]["end"] == at(2, 4 + 9 + 1)  # 😀 is two units
    assert first["range"]["end"] == at(2, len(line) + 2)   # through its comment (two 😀)
    assert second["detail"] == 'relu "é😀"' and third["range"]["end"] == at(4, len(WIDE.split("\n")[4]) + 2)
    assert found == utf16_outline(WIDE)
    lines = WIDE.split("\n")
    steps = [lines[:4] + ["    %c = relu(x=%b)  # é"] + lines[5:]]
    steps.append(steps[-1][:2] + ["    # 😀 above them all"] + steps[-1][2:])
    steps.append(steps[-1][:4] + ['    %b = relu(x=%"naïve😀", name="b")'] + steps[-1][5:])
    for version, step in enumerate(steps, start=2):
        text = "\n".join(step)
        assert [d["code"] for d in change(client, uri, version, text)] == ["unusual-name"]
        assert client.request("textDocument/documentSymbol", doc(uri)) == utf16_outline(text)
    assert client.request("textDocument/documentSymbol", doc(uri))[0]["children"][0]["children"][2]["detail"] == "relu"


def test_diagnostics_wait_as_long_as_the_text_takes_to_analyse():
    """The wait from an edit to its diagnostics (in which the next key supersedes it) follows
    what the text's last analysis cost: a small text gets them sooner, a big one's fast typing
    is still analysed once, and no wait is longer than it was."""
    from miltext.lsp.server import DEBOUNCE, Pace
    pace = Pace()
    assert pace.wait("file:///new.mil") == DEBOUNCE   # not analysed yet: the longest wait
    for uri, took in (("file:///small.mil", 0.003), ("file:///1k.mil", 0.015), ("file:///10k.mil", 0.6)):
        pace.analysed(uri, took)
    small, mid, big = (pace.wait(f"file:///{name}.mil") for name in ("small", "1k", "10k"))
    assert 0 < small < mid < big == DEBOUNCE
    pace.analysed("file:///small.mil", 0.0)
    assert pace.wait("file:///small.mil") > 0   # edits sent at once are still analysed once
    pace.forget("file:///1k.mil")
    assert pace.wait("file:///1k.mil") == DEBOUNCE


def renamed_steps(text: str) -> list[str]:
    """Keys typed into the name %s3 declares (its readers lose it, did-you-mean changes with
    each key), meanwhile %p0 made %s3_ (a nearer name for them, the suggestion before standing)
    and back, then the keys taken out again; and %t3 typed into %t4 (a name declared twice)."""
    lines = text.split("\n")
    n = next(i for i, line in enumerate(lines) if line.startswith("    %s3 = "))
    m = n + 1
    p0 = next(i for i, line in enumerate(lines) if line.startswith("    %p0 = "))
    steps = []
    for name in ("%s31", "%s312", "%s31", "%S3", "%s3"):
        lines[n] = "    " + name + lines[n][lines[n].index(" = "):]
        steps.append("\n".join(lines))
        if name == "%s312":
            for declared in ("%s3_", "%p0"):
                lines[p0] = "    " + declared + lines[p0][lines[p0].index(" = "):]
                steps.append("\n".join(lines))
    lines[m] = lines[m].replace("%t3 = ", "%t4 = ")
    steps.append("\n".join(lines))
    lines[m] = lines[m].replace("%t4 = ", "%t3 = ")
    steps.append("\n".join(lines))
    return steps


def test_typing_into_a_declared_name_checks_only_what_reads_it(client):
    """A key typed into a declared name is checked again in the ops that read the old or the
    new name, its "did you mean" from the names index: the diagnostics are a fresh text's."""
    from miltext.lsp.analysis import Analysis
    text = shorthand()
    a = Analysis(text)
    assert a.findings(complete=True) == []
    for step in renamed_steps(text):
        a = Analysis(step, a)
        found = a.findings()
        assert not a.complete   # not a whole check
        assert [(f.range, f.message, f.code) for f in found] == \
            [(f.range, f.message, f.code) for f in Analysis(step).findings(complete=True)]
    steps = renamed_steps(text)
    assert any("did you mean %s31?" in f.message for f in Analysis(steps[0]).findings(complete=True))
    assert any("%s3 is not defined; did you mean %s3_?" in f.message for f in Analysis(steps[2]).findings(complete=True))
    uri = "file:///renamed.mil"
    open_text(client, uri, text)
    for version, step in enumerate(renamed_steps(text), start=2):
        typed = change(client, uri, version, step)
        fresh = f"file:///renamed-fresh-{version}.mil"
        assert json.dumps(typed) == json.dumps(open_text(client, fresh, step)).replace(fresh, uri)
        assert typed or step == text
