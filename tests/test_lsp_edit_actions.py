"""The language server's refactors (issue 32): "Expose %v as an output" and a rename of an input,
over JSON-RPC, make the text say what `miltext edit --expose` / `--rename-input` make of it:
the built results are the same model, in the program and the model section, nested blocks too."""
from miltext.cli import main
from miltext.lsp.actions import refactors
from miltext.lsp.analysis import Analysis
from miltext.model.file_text import file_text
from support.lsp import open_text
from support.texts import NESTED

# NESTED with its model section, as `miltext print` writes the package built from it
SECTION = """model(specificationVersion=8) {
  input %x: (1, 2, fp32)
  input %pred: (1, int32)
  output %total: (1, 2, fp32)
}

"""


def place(text: str, written: str, nth: int = 0) -> tuple:
    """(line, column) of the nth place `written` is written, 0-based."""
    for n, line in enumerate(text.split("\n")):
        column = line.find(written)
        while column >= 0:
            if nth == 0:
                return n, column + 1
            nth -= 1
            column = line.find(written, column + 1)
    raise AssertionError(f"{written} is not in the text")


def applied(text: str, edits: list) -> str:
    """The text with LSP TextEdits made (ASCII: UTF-16 units are characters)."""
    starts = [0]
    for line in text.split("\n"):
        starts.append(starts[-1] + len(line) + 1)

    def offset(p):
        return starts[p["line"]] + p["character"]
    for e in sorted(edits, key=lambda e: offset(e["range"]["start"]), reverse=True):
        text = text[:offset(e["range"]["start"])] + e["newText"] + text[offset(e["range"]["end"]):]
    return text


def actions_at(client, uri: str, pos: tuple) -> list:
    at = {"line": pos[0], "character": pos[1]}
    return client.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {"start": at, "end": at},
                                                      "context": {"diagnostics": []}})


def built(tmp_path, name: str, text: str) -> str:
    """The package `miltext build` makes of `text`, printed."""
    (tmp_path / f"{name}.mil").write_text(text)
    assert main(["build", str(tmp_path / f"{name}.mil"), "-o", str(tmp_path / f"{name}.mlpackage")]) == 0
    return file_text(str(tmp_path / f"{name}.mlpackage"))


def edited(tmp_path, text: str, *flags) -> str:
    """The package `miltext edit` makes of `text` with `flags`, printed."""
    (tmp_path / "source.mil").write_text(text)
    assert main(["edit", str(tmp_path / "source.mil"), "-o", str(tmp_path / "edited.mlpackage"), *flags]) == 0
    return file_text(str(tmp_path / "edited.mlpackage"))


def test_expose_as_an_output_is_miltext_edit_expose(client, tmp_path, capsys):
    for i, text in enumerate([SECTION + NESTED, NESTED]):
        uri = f"file:///expose{i}.mil"
        open_text(client, uri, text)
        (action,) = [a for a in actions_at(client, uri, place(text, "%count:")) if a["title"].startswith("Expose")]
        assert action["title"] == "Expose %count as an output" and action["kind"] == "refactor.rewrite"
        after = applied(text, action["edit"]["changes"][uri])
        assert "  } -> (%total, %count)" in after
        assert ("  output %count: (..., int32)" in after) == (i == 0)   # typed as --expose types it
        assert built(tmp_path, f"lsp{i}", after) == edited(tmp_path, text, "--expose", "count")
    capsys.readouterr()


def test_expose_types_a_var_the_text_leaves_untyped(client, tmp_path, capsys):
    text = SECTION + NESTED.replace("%flag: (bool) = greater", "%flag = greater") \
        .replace("%squeeze_0: (int32) = squeeze", "%squeeze_0 = squeeze")
    uri = "file:///expose_inferred.mil"
    open_text(client, uri, text)
    (action,) = actions_at(client, uri, place(text, "%squeeze_0 ="))
    after = applied(text, action["edit"]["changes"][uri])
    assert "  output %squeeze_0: (..., int32)" in after
    assert built(tmp_path, "lsp", after) == edited(tmp_path, text, "--expose", "squeeze_0")
    capsys.readouterr()


def test_a_var_inside_a_block_gets_no_expose_but_the_reason_edit_gives(client, tmp_path, capsys):
    text = SECTION + NESTED
    uri = "file:///expose_nested.mil"
    open_text(client, uri, text)
    for var in ("%relu_0:", "%add_3:", "%acc:"):
        assert actions_at(client, uri, place(text, var)) == []    # this client does not show disabled ones
    (refused,) = refactors(Analysis(text), place(text, "%relu_0:"))
    assert refused.edits == [] and refused.disabled.startswith(
        "%relu_0 is defined inside a block of cond %cond_0, and a block's vars exist only while the block runs")
    (tmp_path / "t.mil").write_text(text)
    assert main(["edit", str(tmp_path / "t.mil"), "-o", str(tmp_path / "o.mlpackage"), "--expose", "relu_0"]) == 1
    assert f"--expose relu_0: {refused.disabled}\n" in capsys.readouterr().err
    (output,) = refactors(Analysis(text), place(text, "%total:", 1))
    assert output.disabled == "%total is already an output of function main"


def test_rename_input_is_miltext_edit_rename_input_nested_blocks_and_model_section_too(client, tmp_path, capsys):
    text = SECTION + NESTED
    uri = "file:///rename_input.mil"
    open_text(client, uri, text)
    at_input = place(text, "%x:", 1)    # the function's signature
    (action,) = actions_at(client, uri, at_input)
    assert action["title"] == "Rename input %x" and action["command"]["command"] == "editor.action.rename"
    result = client.request("textDocument/rename", {"textDocument": {"uri": uri},
                                                    "position": {"line": at_input[0], "character": at_input[1]},
                                                    "newName": "features"})
    after = applied(text, result["changes"][uri])
    assert "  input %features: (1, 2, fp32)" in after and "%x" not in after
    assert "mul(x=%features," in after and "relu(x=%features," in after and "add(x=%acc, y=%features," in after
    assert built(tmp_path, "lsp", after) == edited(tmp_path, text, "--rename-input", "x=features")
    # an output is renamed in the section too, from its use in `-> (...)` as from its definition
    at_output = place(text, "%total)")
    result = client.request("textDocument/rename", {"textDocument": {"uri": uri},
                                                    "position": {"line": at_output[0], "character": at_output[1]},
                                                    "newName": "sum"})
    after = applied(text, result["changes"][uri])
    assert "  output %sum: (1, 2, fp32)" in after
    assert built(tmp_path, "lsp", after) == edited(tmp_path, text, "--rename-output", "total=sum")
    capsys.readouterr()


def test_renaming_a_block_var_leaves_the_model_section_alone(client):
    text = SECTION.replace("input %pred", "input %i") + NESTED.replace("%pred", "%i")
    uri = "file:///rename_block_var.mil"
    open_text(client, uri, text)
    at = place(text, "%i:", 2)    # block3's %i (after the section's and the signature's), not the input
    result = client.request("textDocument/rename", {"textDocument": {"uri": uri},
                                                    "position": {"line": at[0], "character": at[1]}, "newName": "step"})
    after = applied(text, result["changes"][uri])
    assert "  input %i: (1, int32)" in after and "block3(%step: (int32)" in after
