"""`miltext lsp` features over JSON-RPC, in both dialects: completion, references, rename,
highlight, inlay hints, code actions, hover on ops, a broken file that keeps its tools, blob
offsets checked beside an unpacked model's weights, and edits that reparse only their op."""

import numpy as np

from support.lsp import at, change, doc, open_text, raw_request, request_at, span
from support.texts import GOOD, MODELMIL, SHORT


def labels(result):
    items = result["items"] if isinstance(result, dict) else result
    return [i["label"] for i in items]


# ---- completion ----

def test_completion_of_op_names_by_opset(client):
    uri = "file:///complete_ops.mil"
    line = "    %d = "
    open_text(client, uri, SHORT.replace("  } -> (%c)", line + "\n  } -> (%c)"))
    got = labels(request_at(client, "textDocument/completion", uri, 5, len(line)))
    assert {"relu", "conv", "constexpr_affine_dequantize"} <= set(got)   # the last is iOS16's...
    assert "scaled_dot_product_attention" not in got                      # and this iOS18's
    old = SHORT.replace("CoreML7", "CoreML5").replace("  } -> (%c)", line + "\n  } -> (%c)")
    open_text(client, "file:///complete_ops5.mil", old)
    got5 = labels(request_at(client, "textDocument/completion", "file:///complete_ops5.mil", 5, len(line)))
    assert "relu" in got5 and "constexpr_affine_dequantize" not in got5   # ...not iOS15's


def test_completion_of_input_keys_names_and_dtypes(client):
    uri = "file:///complete_more.mil"
    line = "    %d = conv(x=%c, "
    open_text(client, uri, SHORT.replace("  } -> (%c)", line + "\n  } -> (%c)"))
    items = request_at(client, "textDocument/completion", uri, 5, len(line))["items"]
    keys = {i["label"]: i for i in items}
    assert "x" not in keys and {"weight", "bias", "strides", "groups"} <= set(keys)
    assert keys["weight"]["detail"] == "required" and keys["weight"]["insertText"] == "weight="

    line = "    %d = relu(x=%"
    open_text(client, uri + "2", SHORT.replace("  } -> (%c)", line + "\n  } -> (%c)"))
    items = request_at(client, "textDocument/completion", uri + "2", 5, len(line))["items"]
    assert sorted(i["label"] for i in items) == ["%a", "%b", "%c", "%x"]   # what is in scope there
    (x,) = [i for i in items if i["label"] == "%x"]
    assert x["textEdit"]["range"] == span(5, len(line) - 1, len(line)) and x["detail"] == "%x: (2, 4, fp32)"

    line = "    %d: (2, 4, f"
    open_text(client, uri + "3", SHORT.replace("  } -> (%c)", line + "\n  } -> (%c)"))
    got = labels(request_at(client, "textDocument/completion", uri + "3", 5, len(line)))
    assert {"fp16", "fp32", "int8", "bool"} <= set(got)


def test_completion_in_model_mil(client):
    uri = "file:///complete.model.mil"
    line = "            tensor<fp16, [1, 10]> z = sub(x = "
    open_text(client, uri, MODELMIL.replace("        } -> (out);", line + "\n        } -> (out);"))
    items = request_at(client, "textDocument/completion", uri, 6, len(line))["items"]
    assert {i["label"]: i["detail"] for i in items} == {
        "x": "tensor<fp16, [1, 10]> x", "y": "tensor<fp16, [1, 10]> y",
        "prod": "tensor<fp16, [1, 10]> prod", "out": "tensor<fp16, [1, 10]> out"}
    line = "            tensor<fp16, [1, 10]> z = sub(x = out, "
    open_text(client, uri + "2", MODELMIL.replace("        } -> (out);", line + "\n        } -> (out);"))
    items = request_at(client, "textDocument/completion", uri + "2", 6, len(line))["items"]
    assert [(i["label"], i["insertText"]) for i in items] == [("y", "y = ")]
    line = "            tensor<fp16, [1, 10]> z = "
    open_text(client, uri + "3", MODELMIL.replace("        } -> (out);", line + "\n        } -> (out);"))
    assert {"sub", "matmul", "gelu"} <= set(labels(request_at(client, "textDocument/completion", uri + "3", 6, len(line))))


# ---- references, highlight, rename ----

def test_references_highlight_and_rename(client):
    uri = "file:///refs.mil"
    open_text(client, uri, SHORT)
    places = [span(2, 4, 6), span(3, 15, 17), span(3, 21, 23), span(4, 35, 37)]
    refs = request_at(client, "textDocument/references", uri, 3, 16, context={"includeDeclaration": True})
    assert [r["range"] for r in refs] == places and all(r["uri"] == uri for r in refs)
    refs = request_at(client, "textDocument/references", uri, 3, 16, context={"includeDeclaration": False})
    assert [r["range"] for r in refs] == places[1:]
    marks = request_at(client, "textDocument/documentHighlight", uri, 4, 36)
    assert [(m["range"], m["kind"]) for m in marks] == [(places[0], 3)] + [(p, 2) for p in places[1:]]
    assert request_at(client, "textDocument/prepareRename", uri, 2, 5) == places[0]
    edit = request_at(client, "textDocument/rename", uri, 2, 5, newName="act")
    assert sorted((e["range"]["start"]["line"], e["range"]["start"]["character"], e["newText"])
                  for e in edit["changes"][uri]) == [(2, 4, "%act"), (3, 15, "%act"), (3, 21, "%act"), (4, 35, "%act")]


def test_rename_keeps_scopes(client):
    # block3's %lx and block4's %lx are two vars: renaming one leaves the other
    uri = "file:///scoped.mil"
    open_text(client, uri, GOOD)
    lines = GOOD.split("\n")
    edit = request_at(client, "textDocument/rename", uri, 17, lines[17].index("%lx") + 1, newName="%"+"body x")
    got = sorted((e["range"]["start"]["line"], e["newText"]) for e in edit["changes"][uri])
    assert got == [(16, '%"body x"'), (17, '%"body x"')]


def test_references_and_rename_in_model_mil(client):
    uri = "file:///refs.model.mil"
    open_text(client, uri, MODELMIL)
    lines = MODELMIL.split("\n")
    decl, use = lines[4].index("prod"), lines[5].index("prod, y")
    refs = request_at(client, "textDocument/references", uri, 5, use + 1, context={"includeDeclaration": True})
    assert [r["range"] for r in refs] == [span(4, decl, decl + 4), span(5, use, use + 4)]
    out = request_at(client, "textDocument/references", uri, 6, lines[6].index("out") + 1, context={"includeDeclaration": True})
    assert [r["range"]["start"]["line"] for r in out] == [5, 6]   # the block's output too
    edit = request_at(client, "textDocument/rename", uri, 4, decl, newName="product")
    assert sorted(e["newText"] for e in edit["changes"][uri]) == ["product", "product"]
    marks = request_at(client, "textDocument/documentHighlight", uri, 5, use + 1)
    assert [(m["range"], m["kind"]) for m in marks] == [(span(4, decl, decl + 4), 3), (span(5, use, use + 4), 2)]
    refused = raw_request(client, "textDocument/rename", {**doc(uri), "position": at(4, decl), "newName": "a b"})
    assert "not a name model.mil can write" in refused["error"]["message"]


# ---- hover on ops, inlay hints ----

def test_hover_on_an_op_shows_its_signature_in_the_opset(client):
    uri = "file:///ophover.mil"
    open_text(client, uri, SHORT)
    text = request_at(client, "textDocument/hover", uri, 4, SHORT.split("\n")[4].index("mul") + 1)["contents"]["value"]
    assert text.startswith("**mul** in CoreML7 (iOS17)")
    assert "| `x` | required | " in text and "| `y` | required | " in text and "int32" in text
    uri = "file:///ophover.model.mil"
    open_text(client, uri, MODELMIL)
    text = request_at(client, "textDocument/hover", uri, 5, MODELMIL.split("\n")[5].index("add") + 1)["contents"]["value"]
    assert text.startswith("**add** in CoreML7 (iOS17)")
    # an op the function's opset does not have: said so, with where it is
    open_text(client, "file:///sdpa.mil", SHORT.replace("relu(x=%x)", "scaled_dot_product_attention(query=%x, key=%x, value=%x)"))
    text = request_at(client, "textDocument/hover", "file:///sdpa.mil", 2, 12)["contents"]["value"]
    assert text.startswith("**scaled_dot_product_attention** is not in CoreML7; it is in CoreML8")


def test_inlay_hints_show_inferred_types_of_the_shorthand(client):
    uri = "file:///hints.mil"
    open_text(client, uri, SHORT)
    hints = client.request("textDocument/inlayHint", {**doc(uri), "range": {"start": at(0, 0), "end": at(7, 0)}})
    assert [(h["position"], h["label"]) for h in hints] == [(at(2, 6), ": (2, 4, fp32)"), (at(3, 6), ": (2, 4, fp32)")]
    hover = request_at(client, "textDocument/hover", uri, 3, 16)["contents"]["value"]
    assert "%a: (2, 4, fp32)  # inferred" in hover and "output of `relu` op, line 3" in hover
    # model.mil writes every type: nothing to hint
    open_text(client, "file:///hints.model.mil", MODELMIL)
    assert client.request("textDocument/inlayHint", {**doc("file:///hints.model.mil"),
                                                     "range": {"start": at(0, 0), "end": at(8, 0)}}) == []


# ---- code actions ----

def code_actions(client, uri, diagnostics):
    return client.request("textDocument/codeAction", {**doc(uri), "range": diagnostics[0]["range"],
                                                      "context": {"diagnostics": diagnostics}})


def test_quick_fix_for_a_suggestion(client):
    uri = "file:///suggest.mil"
    text = SHORT.replace("relu(x=%x)", "relux(x=%x)")
    open_text(client, uri, text)
    at_op = span(2, 9, 14)
    # check says `did you mean` in its message, or gives the suggestion as data
    for d in ({"range": at_op, "message": "unknown op 'relux'; did you mean 'relu'?", "code": "unknown-op"},
              {"range": at_op, "message": "unknown op 'relux'", "code": "unknown-op", "data": {"suggestion": "relu"}}):
        (action,) = code_actions(client, uri, [d])
        assert action["kind"] == "quickfix" and action["title"] == "Change to relu"
        assert action["edit"]["changes"][uri] == [{"range": at_op, "newText": "relu"}]
    assert code_actions(client, uri, [{"range": at_op, "message": "unknown op 'relux'", "code": "unknown-op"}]) == []
    uri = "file:///suggest.model.mil"
    text = MODELMIL.replace("= mul(", "= mull(")
    open_text(client, uri, text)
    column = text.split("\n")[4].index("mull")
    d = {"range": span(4, column, column + 4), "message": "unknown op 'mull'; did you mean 'mul'?", "code": "unknown-op"}
    (action,) = code_actions(client, uri, [d])
    assert action["edit"]["changes"][uri] == [{"range": span(4, column, column + 4), "newText": "mul"}]


def test_quick_fix_adds_a_missing_required_input_only_from_a_var_in_scope(client):
    uri = "file:///missing.mil"
    text = SHORT.replace("mul(x=%b, y=%a)", "mul(x=%b)")
    (d,) = open_text(client, uri, text)
    assert d["code"] == "missing-input"
    assert code_actions(client, uri, [d]) == []       # no %y to give: no fix that writes an undefined var
    text = text.replace("(%x: (2, 4, fp32))", "(%x: (2, 4, fp32), %y: (2, 4, fp32))")
    (d,) = change(client, uri, 2, text)
    (action,) = code_actions(client, uri, [d])
    column = text.split("\n")[4].index("%b)") + 2
    assert action["title"] == "Add the required input y"
    assert action["edit"]["changes"][uri] == [{"range": span(4, column, column), "newText": ", y=%y"}]
    uri = "file:///missing.model.mil"
    text = MODELMIL.replace("mul(x = x, y = y)", "mul(x = x)")
    (d,) = open_text(client, uri, text)
    (action,) = code_actions(client, uri, [d])
    column = text.split("\n")[4].index("x)") + 1
    assert action["edit"]["changes"][uri] == [{"range": span(4, column, column), "newText": ", y = y"}]



def test_a_misspelt_input_is_one_error_whose_one_fix_is_the_right_name(client):
    uri = "file:///typo.mil"
    text = ("main[CoreML7](%x: (1, 1, 4, 4, fp32)) {\n  block0() {\n"
            '    %y = max_pool(x=%x, kernel_size=[2, 2], strides=[2, 2], pad_type="valid")\n'
            "  } -> (%y)\n}\n")
    (d,) = open_text(client, uri, text)
    assert d["code"] == "unknown-input" and "did you mean 'kernel_sizes'" in d["message"]
    (action,) = code_actions(client, uri, [d])
    column = text.split("\n")[2].index("kernel_size")
    assert action["edit"]["changes"][uri] == [{"range": span(2, column, column + 11), "newText": "kernel_sizes"}]

# ---- a broken file keeps its tools ----

BROKEN = SHORT.replace("%b = add(x=%a, y=%a)", "%b = add(x=%a, y=%a").replace(
    "  } -> (%c)", "    %e: (2, 4, fp32) = sub(x=%c, y=%a)\n  } -> (%e)")


def test_an_unclosed_parenthesis_is_one_error_and_the_rest_keeps_its_tools(client):
    uri = "file:///broken.mil"
    diagnostics = open_text(client, uri, BROKEN)
    column = BROKEN.split("\n")[3].index("(")
    assert [(d["range"]["start"], d["message"]) for d in diagnostics] == [(at(3, column), "this '(' is never closed")]
    (main,) = client.request("textDocument/documentSymbol", doc(uri))
    assert [s["name"] for s in main["children"][0]["children"]] == ["%a", "%c", "%e"]
    line = BROKEN.split("\n")[5]
    hover = request_at(client, "textDocument/hover", uri, 5, line.index("%a") + 1)
    assert "output of `relu` op, line 3" in hover["contents"]["value"]
    assert request_at(client, "textDocument/definition", uri, 5, line.index("%c") + 1)["range"] == span(4, 4, 6)
    # checks go on around it: a wrong input after the broken line is still found
    diagnostics = change(client, uri, 2, BROKEN.replace("sub(x=%c, y=%a)", "sub(x=%c, z=%a)"))
    assert sorted(d["code"] for d in diagnostics) == ["missing-input", "parse", "unknown-input"]


def test_a_broken_line_in_model_mil(client):
    uri = "file:///broken.model.mil"
    text = MODELMIL.replace("mul(x = x, y = y)[", "mul(x = x, y = y[")
    diagnostics = open_text(client, uri, text)
    assert len(diagnostics) == 1 and diagnostics[0]["range"]["start"]["line"] == 4
    lines = text.split("\n")
    hover = request_at(client, "textDocument/hover", uri, 5, lines[5].index("y = x") + 4)
    assert "input of function `main`" in hover["contents"]["value"]
    (main,) = client.request("textDocument/documentSymbol", doc(uri))
    assert [s["name"] for s in main["children"]] == ["out"]


# ---- edits ----

def test_edits_follow_line_moves(client):
    uri = "file:///moves.mil"
    open_text(client, uri, GOOD)
    moved = GOOD.replace("  block0() {\n", "  block0() {\n\n\n    %z: (fp32) = const(val=1.0, name=\"z\")\n")
    assert change(client, uri, 2, moved) == []
    lines = moved.split("\n")
    n = next(i for i, line in enumerate(lines) if "%t: (1, 2, fp32)" in line)
    assert request_at(client, "textDocument/definition", uri, n, lines[n].index("%two") + 1)["range"] == \
        span(n - 1, 8, 12)
    broken = moved.replace('%two: (fp32) = const(val=2.0, name="two")', '%two: (fp32) = const(val=2.0, name="two"')
    (d,) = change(client, uri, 3, broken)
    assert d["range"]["start"]["line"] == n - 1 and "never closed" in d["message"]
    assert change(client, uri, 4, moved) == []


def test_blob_offsets_checked_beside_weights(client, tmp_path):
    from miltext.model.weights import write_weights
    folder = tmp_path / "unpacked"
    (folder / "weights").mkdir(parents=True)
    (offset,) = write_weights(str(folder / "weights" / "weight.bin"), [("fp32", np.arange(8, dtype=np.float32))])
    text = ('main[CoreML7]() {\n  block0() {\n'
            '    %w: (8, fp32) = const(val=(8, fp32)(blob(OFFSET)), name="w")\n  } -> (%w)\n}\n')
    (folder / "model.mil").write_text(text)
    uri = (folder / "model.mil").as_uri()
    diagnostics = open_text(client, uri, text.replace("OFFSET", str(offset + 4096)))
    assert [d["code"] for d in diagnostics] == ["blob-range"]
    assert diagnostics[0]["range"]["start"]["line"] == 2
    assert change(client, uri, 2, text.replace("OFFSET", str(offset))) == []
    # the same text where no weights are beside it: its blobs cannot be checked
    elsewhere = (tmp_path / "model.mil").as_uri()
    assert "blob-range" not in [d["code"] for d in open_text(client, elsewhere, text.replace("OFFSET", str(offset + 4096)))]
