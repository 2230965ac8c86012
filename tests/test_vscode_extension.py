"""The VS Code extension as it ships: `vsce package` (from editors/vscode's own node_modules,
`npm ci` there; `make test` does it) makes a .vsix without a warning, holding the bundled
client and nothing of node_modules; and its Markdown injection colours ```mil blocks with the
MIL grammar (run by vscode-textmate, editors/vscode/test)."""
import json
import os
import shutil
import subprocess
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VSCODE = os.path.join(ROOT, "editors", "vscode")
HARNESS = os.path.join(VSCODE, "test")


def node() -> str:
    found = shutil.which("node")
    if found is None:
        pytest.fail("node is not installed; the VS Code extension tests need Node.js")
    return found


@pytest.fixture(scope="module")
def vsix(tmp_path_factory):
    if not os.path.exists(os.path.join(VSCODE, "node_modules", "@vscode", "vsce")):
        pytest.fail("the extension's tools are not installed: run `npm ci --prefix editors/vscode` (make test does)")
    out = tmp_path_factory.mktemp("vsix") / "mil.vsix"
    run = subprocess.run([node(), os.path.join("node_modules", "@vscode", "vsce", "vsce"), "package",
                          "--allow-missing-repository", "--out", str(out)],
                         cwd=VSCODE, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    return out, run.stdout + run.stderr


def test_packaged_without_warnings(vsix):
    _, said = vsix
    assert "WARNING" not in said.upper().replace("WARNING_THRESHOLD", ""), said
    assert "DONE" in said


def test_the_vsix_holds_what_the_extension_runs_and_no_more(vsix):
    path, _ = vsix
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/package.json"))
        bundle = z.read("extension/dist/extension.js").decode("utf-8")
    assert {"extension/package.json", "extension/dist/extension.js", "extension/readme.md", "extension/LICENSE.txt",
            "extension/images/icon.png", "extension/language-configuration.json",
            "extension/syntaxes/mil.tmLanguage.json", "extension/syntaxes/mil.markdown.tmLanguage.json"} <= names
    assert not [n for n in names if "node_modules" in n or n.startswith("extension/test/") or n.endswith("make_icon.py")]
    assert manifest["main"] == "./dist/extension.js" and manifest["license"] == "Apache-2.0"
    assert "OWNER" not in json.dumps(manifest)        # no placeholder: miltext has no public repository yet
    # the client is bundled: only vscode itself is required at run time
    assert 'require("vscode")' in bundle and 'require("vscode-languageclient' not in bundle
    assert "LanguageClient" in bundle or "languageclient" in bundle.lower()
    settings = manifest["contributes"]["configuration"]["properties"]
    assert settings["miltext.server.command"]["default"] == "miltext"
    assert settings["miltext.server.args"]["default"] == ["lsp"]
    assert [c["command"] for c in manifest["contributes"]["commands"]] == ["miltext.restartServer"]
    (injection,) = [g for g in manifest["contributes"]["grammars"] if "injectTo" in g]
    assert injection["injectTo"] == ["text.html.markdown"]


def test_the_extension_restarts_on_settings_and_on_command():
    with open(os.path.join(VSCODE, "extension.js"), encoding="utf-8") as f:
        source = f.read()
    assert "registerCommand('miltext.restartServer', restart)" in source
    assert "affectsConfiguration('miltext.server')) restart()" in source


def test_mil_blocks_in_markdown_are_coloured(tmp_path):
    if not os.path.isdir(os.path.join(HARNESS, "node_modules", "vscode-textmate")):
        pytest.fail("vscode-textmate is not installed: run `npm ci --prefix editors/vscode/test` (make test does)")
    page = tmp_path / "notes.md"
    page.write_text("# notes\n\n```mil\n%y: (2, fp32) = relu(x=%x)\n```\n\n%z = relu(x=%x)\n\n"
                    "~~~ MIL\n%w = relu(x=%y)\n~~~\n\n```python\n%w = 1\n```\n", encoding="utf-8")
    run = subprocess.run([node(), os.path.join(HARNESS, "markdown.js"),
                          os.path.join(VSCODE, "syntaxes", "mil.tmLanguage.json"),
                          os.path.join(VSCODE, "syntaxes", "mil.markdown.tmLanguage.json"), str(page)],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    lines = json.loads(run.stdout)

    def scopes_of(line_no, text):
        line, tokens = lines[line_no]
        start = line.index(text)
        return next(s for a, b, s in tokens if a <= start < b)

    assert "meta.embedded.block.mil" in scopes_of(3, "%y") and "variable.other.declaration.mil" in scopes_of(3, "%y")
    assert any(s.startswith("entity.name.function") or s.startswith("support.function") for s in scopes_of(3, "relu"))
    assert "meta.embedded.block.mil" in scopes_of(9, "%w") and scopes_of(9, "%w")[-1].startswith("variable.other")  # ~~~, MIL
    assert scopes_of(6, "%z") == ["text.html.markdown"]                               # outside any block
    assert scopes_of(13, "%w") == ["text.html.markdown"]                              # a python block
