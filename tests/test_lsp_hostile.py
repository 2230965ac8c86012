"""`miltext lsp` against what a careless or hostile client sends (issue 25), over JSON-RPC: a
URI it never opened (a FIFO among them), places out of range, renames onto a name in use, names
holding characters other tools end lines at, and weight references that lead elsewhere."""
import os
import re

import numpy as np
import pytest

from support.lsp import at, change, doc, open_text, raw_request, request_at
from support.texts import MODELMIL, SHORT

INVALID_PARAMS = -32602


def utf16_place(text: str, offset: int) -> dict:
    """The LSP place of an offset, worked out here from the protocol's words: lines end at
    \\n, \\r\\n or \\r; a column counts UTF-16 code units."""
    before = re.split(r"\r\n|\r|\n", text[:offset])
    return at(len(before) - 1, len(before[-1].encode("utf-16-le")) // 2)


def utf16_range(text: str, start: int, end: int) -> dict:
    return {"start": utf16_place(text, start), "end": utf16_place(text, end)}


# ---- documents the client has not opened ----

def test_a_uri_never_opened_is_not_read(client, tmp_path):
    fifo = tmp_path / "pipe.mil"
    os.mkfifo(fifo)            # reading it would block the server for ever
    plain = tmp_path / "plain.mil"
    plain.write_text(SHORT)    # a real program, on disk but not open
    for uri in (fifo.as_uri(), plain.as_uri(), "untitled:never"):
        assert request_at(client, "textDocument/hover", uri, 2, 5) is None
        assert request_at(client, "textDocument/definition", uri, 3, 16) is None
        assert request_at(client, "textDocument/references", uri, 3, 16, context={"includeDeclaration": True}) == []
        assert request_at(client, "textDocument/rename", uri, 2, 5, newName="z") is None
        assert client.request("textDocument/documentSymbol", doc(uri)) == []
        assert client.request("textDocument/formatting", {**doc(uri), "options": {"tabSize": 2, "insertSpaces": True}}) == []
    # and the server still answers for what is open
    uri = "file:///open.mil"
    open_text(client, uri, SHORT)
    assert "relu" in request_at(client, "textDocument/hover", uri, 2, 5)["contents"]["value"]


def test_places_out_of_range_get_an_answer(client):
    uri = "file:///ranges.mil"
    open_text(client, uri, SHORT)
    for line, character in ((-1, 0), (0, -1), (-5, -5), (3, 2 ** 31), (2 ** 31, 0)):
        answer = raw_request(client, "textDocument/hover", {**doc(uri), "position": at(line, character)})
        assert answer["error"]["code"] == INVALID_PARAMS
        assert "Position" in answer["error"]["message"] and "Traceback" not in answer["error"]["message"]
    for line, character in ((1000, 0), (3, 100000), (2 ** 31 - 1, 2 ** 31 - 1)):   # valid, past the end
        answer = raw_request(client, "textDocument/references", {**doc(uri), "position": at(line, character),
                                                                  "context": {"includeDeclaration": True}})
        assert answer["result"] == []
    assert "relu" in request_at(client, "textDocument/hover", uri, 2, 5)["contents"]["value"]


# ---- rename ----

def test_a_rename_onto_a_name_in_use_is_refused(client):
    uri = "file:///rename_onto.mil"
    open_text(client, uri, SHORT)
    for taken in ("b", "%b", "%c", "x", '%"x"'):
        answer = raw_request(client, "textDocument/rename", {**doc(uri), "position": at(2, 5), "newName": taken})
        assert "already defined" in answer["error"]["message"], taken
    for bad in ("", "%"):
        answer = raw_request(client, "textDocument/rename", {**doc(uri), "position": at(2, 5), "newName": bad})
        assert answer["error"]["message"] == "a var needs a name"
    edit = request_at(client, "textDocument/rename", uri, 2, 5, newName='%"a b"')
    assert {e["newText"] for e in edit["changes"][uri]} == {'%"a b"'}
    edit = request_at(client, "textDocument/rename", uri, 2, 5, newName="a")   # itself: no change
    assert {e["newText"] for e in edit["changes"][uri]} == {"%a"}


def test_a_rename_in_model_mil_onto_a_name_in_use_or_a_word_is_refused(client):
    uri = "file:///rename_onto.model.mil"
    open_text(client, uri, MODELMIL)
    decl = MODELMIL.split("\n")[4].index("prod")
    for taken, why in (("out", "already defined"), ("x", "already defined"), ("tensor", "not a name"),
                       ("fp16", "not a name"), ("a b", "not a name")):
        answer = raw_request(client, "textDocument/rename", {**doc(uri), "position": at(4, decl), "newName": taken})
        assert why in answer["error"]["message"], taken


# ---- names holding characters some tools end a line at ----

NAMED = """main[CoreML7](%x: (2, 4, fp32)) {
  block0() {
    NAME: (2, 4, fp32) = relu(x=%x, name="a")
    %b: (2, 4, fp32) = add(x=NAME, y=NAME, name="b")
  } -> (%b)
}
"""


@pytest.mark.parametrize("inside", ["\u2028", "\x85", "\x0c", "\r", "\u2029", "\U0001f600\r\u2028",
                                    "\\u2028", "\\r"])
def test_ranges_of_names_holding_line_breaks_of_other_tools(client, inside):
    name = '%"a' + inside + 'b"'
    text = NAMED.replace("NAME", name)
    uri = f"file:///named_{ord(inside[0])}_{len(inside)}.mil"
    open_text(client, uri, text)
    offsets = [m.start() for m in re.finditer(re.escape(name), text)]
    expected = [utf16_range(text, o, o + len(name)) for o in offsets]
    use = expected[1]["start"]
    refs = request_at(client, "textDocument/references", uri, use["line"], use["character"] + 1,
                      context={"includeDeclaration": True})
    assert [r["range"] for r in refs] == expected
    last = expected[2]["end"]   # the cursor just past the last use, on its line as LSP counts them
    edit = request_at(client, "textDocument/rename", uri, last["line"], last["character"], newName="q")
    assert sorted((e["range"]["start"]["line"], e["range"]["start"]["character"], e["range"]["end"]["character"])
                  for e in edit["changes"][uri]) == \
        sorted((r["start"]["line"], r["start"]["character"], r["end"]["character"]) for r in expected)


def test_incremental_edits_after_a_u2028_land_where_the_client_means(client):
    text = NAMED.replace("NAME", '%"a\u2028b"')
    uri = "file:///incremental_u2028.mil"
    open_text(client, uri, text)
    at_b = text.index("%b:")
    where = utf16_place(text, at_b + 1)   # %b -> %bb, in an edit with a range
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2}, "contentChanges": [
        {"range": {"start": where, "end": where}, "text": "b"}]})
    edited = text[:at_b + 1] + "b" + text[at_b + 1:]
    while True:
        published = client.notification("textDocument/publishDiagnostics", uri)
        if published.get("version") == 2:
            break
    # the block output still reads %b, now undefined: the one error, where the client sees it
    (d,) = [d for d in published["diagnostics"] if d["severity"] == 1]
    undefined = edited.index("(%b)") + 1
    assert d["range"]["start"] == utf16_place(edited, undefined) and "%b" in d["message"]
    decl = utf16_place(edited, at_b)
    refs = request_at(client, "textDocument/references", uri, decl["line"], decl["character"] + 1,
                      context={"includeDeclaration": True})
    assert [r["range"] for r in refs] == [utf16_range(edited, at_b, at_b + 3)]


# ---- weight references ----

REFS = """main[CoreML7]() {
  block0() {
    %w: (2, 4, fp32) = const(val=(2, 4, fp32)(npy("w.npy")), name="w")
    %v: (3, 4, fp32) = const(val=(3, 4, fp32)(npy("w.npy")), name="v")
    %o: (2, 4, fp32) = const(val=(2, 4, fp32)(npy("../outside.npy")), name="o")
    %s: (2, 4, fp32) = add(x=%w, y=%o, name="s")
  } -> (%s, %v)
}
"""


def test_weight_references_resolve_beside_the_text_confined_and_reported_at_themselves(client, tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    np.save(folder / "w.npy", np.zeros((2, 4), np.float32))
    np.save(tmp_path / "outside.npy", np.zeros((2, 4), np.float32))   # there, but out of the folder
    assert not os.path.exists("w.npy")   # the server's working folder has none
    uri = (folder / "model.mil").as_uri()
    diagnostics = open_text(client, uri, REFS)
    lines = REFS.split("\n")
    wanted = [(3, lines[3].index('"w.npy"'), "has shape (2, 4), but the type says (3, 4)"),
              (4, lines[4].index('"../outside.npy"'), "outside the model's folder")]
    got = [(d["range"]["start"]["line"], d["range"]["start"]["character"], d["message"])
           for d in diagnostics if d["code"] == "weight-ref"]
    assert [(line, column) for line, column, _ in got] == [(line, column) for line, column, _ in wanted]
    assert all(words in message for (_, _, message), (_, _, words) in zip(got, wanted))
    # an edit that moves them: the errors move with them, for the ops read again and the others
    moved = REFS.replace("  block0() {\n", '  block0() {\n    %z: (1, fp32) = const(val=(1, fp32)([1.0]), name="z")\n')
    diagnostics = change(client, uri, 2, moved)
    assert [(d["range"]["start"]["line"], d["range"]["start"]["character"])
            for d in diagnostics if d["code"] == "weight-ref"] == [(line + 1, column) for line, column, _ in wanted]


def test_a_name_inside_a_string_or_comment_is_no_use_and_print_names_stay_raw():
    from miltext.lsp.analysis import Analysis
    text = SHORT.replace('%b = add(x=%a, y=%a)', '%b = add(x=%a, y=%a, name="not %a")  # nor %a')
    a = Analysis(text)
    assert [o.start for o in a.references((2, 5))] == [(2, 4), (3, 15), (3, 21), (4, 35)]
    # a coremltools print writes names raw (`%layer.0/relu:0`): found whole, renamed raw or refused
    print_text = ('main[CoreML7](%x: (2, 4, fp32)(Tensor)) {\n  block0() {\n'
                  '    %relu:0: (2, 4, fp32)(Tensor) = relu(x=%x, name="relu:0")\n  } -> (%relu:0)\n}\n')
    a = Analysis(print_text)
    assert a.reading.raw and [(o.start, o.end) for o in a.references((2, 6))] == [((2, 4), (2, 11)), ((3, 8), (3, 15))]
    assert {t for _, t in a.rename((2, 6), "r:1")} == {"%r:1"}
    with pytest.raises(ValueError, match="coremltools print"):
        a.rename((2, 6), "a b")
