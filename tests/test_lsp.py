"""`miltext lsp` through a real JSON-RPC exchange: the server runs as a subprocess and this test
speaks LSP to it over stdio, as an editor does (places in UTF-16 units, the LSP default)."""
import os

import miltext
from support.corpus import CORPUS
from support.lsp import at, open_text, span
from support.texts import GOOD

BAD = """main[CoreML7](%x: (2, 4, fp32)) {
  block0() {
    %a: (2, 4, fp32) = relu(x=%x name="a")
    %b: (2, 4) = relu(x=%a, name="b")
    %c: (2, 4, fp32) = add(x=%b, y=int8(300), name="c")
  } -> (%c)
}
"""


def test_server_says_what_it_can_do(client):
    caps = client.capabilities
    assert caps["hoverProvider"] and caps["definitionProvider"]
    assert caps["documentSymbolProvider"] and caps["documentFormattingProvider"]


def test_parse_errors_on_open_with_their_ranges(client):
    diagnostics = open_text(client, "file:///bad.mil", BAD)
    assert [(d["range"], d["severity"], d["message"]) for d in diagnostics] == [
        (span(2, 33, 37), 1, "unexpected argument 'name': expected ',' or ')'"),
        (span(3, 8, 14), 1, "expected a type such as (2, 4, fp32): the dtype comes last"),
        (span(4, 35, 39), 1, "300 does not fit in int8 (-128 to 127)"),
    ]
    assert all(d["source"] == "miltext" for d in diagnostics)


def test_diagnostics_follow_changes(client):
    uri = "file:///changing.mil"
    assert open_text(client, uri, GOOD) == []
    broken = GOOD.replace("%two: (fp32)", "%two: (fp32")
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": broken}]})
    (d,) = client.notification("textDocument/publishDiagnostics", uri)["diagnostics"]
    assert d["range"]["start"]["line"] == 5 and d["severity"] == 1
    # An incremental change that mends it: the closing parenthesis back in its place.
    column = broken.split("\n")[5].index("(fp32") + len("(fp32")
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 3},
                                             "contentChanges": [{"range": span(5, column, column), "text": ")"}]})
    assert client.notification("textDocument/publishDiagnostics", uri)["diagnostics"] == []


def test_ranges_count_utf16_units(client):
    # U+1F600 is one code point but two UTF-16 units: the error's column moves by one.
    text = 'main[CoreML7](%x: (2, fp32)) {\n  block0() {\n    %a: (2, fp32) = relu(x=%x, name="\U0001F600" oops)\n  } -> (%a)\n}\n'
    (d,) = open_text(client, "file:///emoji.mil", text)
    column = text.split("\n")[2].index("oops")
    assert d["range"] == span(2, column + 1, column + 5)


def test_hover_shows_type_and_defining_op(client):
    uri = "file:///hover.mil"
    open_text(client, uri, GOOD)
    line = GOOD.split("\n")[6]
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at(6, line.index("%two") + 2)})
    assert hover["contents"]["kind"] == "markdown"
    assert "%two: (fp32)" in hover["contents"]["value"]
    assert '`const` op "two", line 6' in hover["contents"]["value"]
    assert hover["range"] == span(6, line.index("%two"), line.index("%two") + 4)
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at(6, line.index("%x") + 1)})
    assert "%x: (1, 2, fp32)" in hover["contents"]["value"] and "input of function `main`" in hover["contents"]["value"]
    op = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at(6, line.index("mul"))})
    assert op["contents"]["value"].startswith("**mul** in CoreML7 (iOS17)")
    assert op["range"] == span(6, line.index("mul"), line.index("mul") + 3)
    nothing = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at(6, line.index("name"))})
    assert nothing is None


def test_definition_follows_scopes(client):
    uri = "file:///definition.mil"
    open_text(client, uri, GOOD)
    lines = GOOD.split("\n")

    def definition(line, name):
        result = client.request("textDocument/definition", {"textDocument": {"uri": uri},
                                                            "position": at(line, lines[line].rindex(name) + 1)})
        assert result["uri"] == uri
        return result["range"]

    assert definition(6, "%two") == span(5, 8, 12)
    assert definition(6, "%x") == span(0, 14, 16)                    # a function input
    assert definition(7, "%t") == span(6, 8, 10)                     # a block output
    assert definition(12, "%c") == span(3, 4, 6)
    assert definition(17, "%lx") == span(16, lines[16].index("%lx"), lines[16].index("%lx") + 3)  # block4's, not block3's
    assert definition(20, "%n") == span(12, lines[12].index("%n"), lines[12].index("%n") + 2)


def test_document_symbols(client):
    uri = "file:///symbols.mil"
    open_text(client, uri, GOOD)
    (main,) = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert (main["name"], main["kind"], main["detail"]) == ("main", 12, "CoreML7")
    assert main["range"] == {"start": at(0, 0), "end": at(21, 1)}
    assert main["selectionRange"] == span(0, 0, 4)
    (block0,) = main["children"]
    assert block0["name"] == "block0" and block0["range"]["end"] == at(20, 17)
    ops = block0["children"]
    # the detail is the op's type, and its name where that is not its output's
    assert [(s["name"], s["detail"]) for s in ops] == [
        ("%c", "cond"), ("%i0", "const"), ("%out, %n", 'while_loop "loop"')]
    assert "children" not in ops[1]   # an op without blocks (LSP's children is optional)
    assert [b["name"] for b in ops[0]["children"]] == ["block1", "block2"]
    assert [s["name"] for s in ops[0]["children"][0]["children"]] == ["%two", "%t"]
    assert ops[0]["range"] == {"start": at(3, 4), "end": at(10, 15)}
    assert [b["name"] for b in ops[2]["children"]] == ["block3", "block4"]


def test_formatting_gives_the_canonical_text(client):
    uri = "file:///format.mil"
    messy = GOOD.replace("cond(pred=%p, name=\"c\")", "cond( pred = %p,\n   name=\"c\" )").replace("  block0", "block0")
    assert open_text(client, uri, messy) == []
    (edit,) = client.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                         "options": {"tabSize": 2, "insertSpaces": True}})
    assert edit["newText"] == miltext.dumps(miltext.loads(messy)) == GOOD
    lines = messy.split("\n")
    assert edit["range"] == {"start": at(0, 0), "end": at(len(lines) - 1, len(lines[-1]))}
    open_text(client, "file:///canonical.mil", GOOD)
    assert client.request("textDocument/formatting", {"textDocument": {"uri": "file:///canonical.mil"},
                                                      "options": {"tabSize": 2, "insertSpaces": True}}) == []


COMMENTED = GOOD.replace("main[CoreML7]", "# what the model does\n\nmain[CoreML7]") \
    .replace("  block0() {\n", "  block0() {  # the body\n    # the branch\n") \
    .replace('name="two")', 'name="two")  # a constant') \
    .replace("      } -> (%r)\n", "        # nothing else\n      } -> (%r)\n\n    # the loop\n") \
    .replace("-> (%out, %n)\n}\n", "-> (%out, %n)\n}\n# the end\n")


def test_formatting_keeps_comments(client):
    uri = "file:///comments.mil"
    messy = COMMENTED.replace("  block0", "block0").replace("cond(pred=%p, ", "cond( pred = %p,\n   ") \
        .replace("  # a constant", "      # a constant").replace("\n\n    # the loop", "\n\n\n\n# the loop")
    open_text(client, uri, messy)
    (edit,) = client.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                         "options": {"tabSize": 2, "insertSpaces": True}})
    assert edit["newText"] == COMMENTED  # every comment where it was, one blank line kept
    from miltext.authored.formatter import comment_texts, format_source
    assert comment_texts(edit["newText"]) == comment_texts(messy) and len(comment_texts(messy)) == 7
    assert edit["newText"] == format_source(messy)  # the formatter of `miltext fmt` and its hook
    open_text(client, "file:///formatted.mil", COMMENTED)
    assert client.request("textDocument/formatting", {"textDocument": {"uri": "file:///formatted.mil"},
                                                      "options": {"tabSize": 2, "insertSpaces": True}}) == []


def test_check_findings_with_their_notes(client):
    text = GOOD.replace("y=%two", "y=%w_to_fp32").replace("%ni: (int32)", "%nx: (int32)")
    uri = "file:///checked.mil"
    diagnostics = {d["code"]: d for d in open_text(client, uri, text)}
    undefined = diagnostics["undefined-name"]
    column = text.split("\n")[6].index("%w_to_fp32")
    assert undefined["range"] == span(6, column, column + len("%w_to_fp32"))
    assert undefined["severity"] == 1 and undefined["message"].split("\n")[0] == "%w_to_fp32 is not defined"
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at(6, column + 1)})
    assert "nothing defines this name" in hover["contents"]["value"]
    twice = diagnostics["redefinition"]
    assert twice["severity"] == 1 and twice["range"] == span(18, 8, 11)
    (first,) = twice["relatedInformation"]
    assert first["location"] == {"uri": uri, "range": span(17, 8, 11)} and first["message"] == "first defined here"


def test_apple_model_mil_dialect(client):
    with open(os.path.join(CORPUS, "modelmil", "01_ios16_add_model.mil"), encoding="utf-8") as f:
        text = f.read()
    uri = "file:///add_model.mil"
    messy = text.replace("mul(x = x, y = y)", "mul(x=x,\n      y = y)")
    assert open_text(client, uri, messy) == []
    lines = messy.split("\n")
    use = lines[4].index("x=x") + 2
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at(4, use)})
    assert "tensor<fp16, [1, 10]> x" in hover["contents"]["value"] and "input of function `main`" in hover["contents"]["value"]
    assert client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at(4, use - 2)}) is None  # the key
    declared = lines[3].index("> x,") + 2
    assert client.request("textDocument/definition", {"textDocument": {"uri": uri}, "position": at(4, use)})["range"] == \
        span(3, declared, declared + 1)
    out = lines[6].index("var_3")
    hover = client.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": at(6, out)})
    assert '`mul` op "op_3_cast_fp16", line 5' in hover["contents"]["value"]
    (main,) = client.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}})
    assert (main["name"], [s["name"] for s in main["children"]]) == ("main", ["var_3"])
    (edit,) = client.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                         "options": {"tabSize": 4, "insertSpaces": True}})
    assert edit["newText"] == text  # still model.mil, as Apple's compiler writes it


def test_a_model_section_is_kept_and_checked(client):
    section = 'model(specificationVersion=8) {\n  input %x: (1, 2, fp32)\n  metadata(author="me")\n}\n\n'
    uri = "file:///with_model.mil"
    (d,) = open_text(client, uri, section.replace("author=", "authr=") + GOOD)
    assert d["range"] == span(2, 11, 16) and "authr" in d["message"]
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": section + GOOD.replace("  block0", "block0")}]})
    found = client.notification("textDocument/publishDiagnostics", uri)["diagnostics"]
    # the section against the program: it leaves out main's bool input and its outputs
    assert {d["code"] for d in found} == {"model-section"} and all(d["range"] == span(0, 0, 5) for d in found)
    assert "main takes input %p, which the model section does not list" in [d["message"] for d in found]
    (edit,) = client.request("textDocument/formatting", {"textDocument": {"uri": uri},
                                                         "options": {"tabSize": 2, "insertSpaces": True}})
    assert edit["newText"] == section + GOOD
