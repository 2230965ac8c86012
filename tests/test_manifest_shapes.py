"""A package's Manifest.json of any shape JSON allows, or not JSON at all, is refused by every
command that reads packages with one line, `PATH: error: ...` naming the manifest, and status 1
(textconv, for git, never fails: it prints the reason instead). Nothing is written."""
import json
import os
import shutil

import pytest

from miltext.cli import main
from model_cases import snapshot
from support.corpus import CORPUS

PACKAGE = os.path.join(CORPUS, "coremltools", "torch_mlp.mlpackage")


def _real() -> dict:
    with open(os.path.join(PACKAGE, "Manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def _edited(change) -> bytes:
    manifest = _real()
    change(manifest)
    return json.dumps(manifest).encode()


def _root_entry(manifest) -> dict:
    return manifest["itemInfoEntries"][manifest["rootModelIdentifier"]]


SHAPES = {
    "list root": b"[1, 2]",
    "string root": b'"Manifest"',
    "number root": b"42",
    "null root": b"null",
    "empty object": b"{}",
    "entries a list": _edited(lambda m: m.update(itemInfoEntries=list(m["itemInfoEntries"].values()))),
    "entries a string": _edited(lambda m: m.update(itemInfoEntries="Data/com.apple.CoreML/model.mlmodel")),
    "entry a list": _edited(lambda m: m["itemInfoEntries"].update({m["rootModelIdentifier"]: ["path"]})),
    "entries without path": _edited(lambda m: [e.pop("path") for e in m["itemInfoEntries"].values()]),
    "path a number": _edited(lambda m: _root_entry(m).update(path=7)),
    "path a list": _edited(lambda m: _root_entry(m).update(path=["Data"])),
    "root points nowhere": _edited(lambda m: m.update(rootModelIdentifier="no-such-item")),
    "root missing": _edited(lambda m: m.pop("rootModelIdentifier")),
    "root a list": _edited(lambda m: m.update(rootModelIdentifier=[1])),
    "root an object": _edited(lambda m: m.update(rootModelIdentifier={"a": 1})),
    "invalid JSON": b'{"itemInfoEntries": {',
    "not UTF-8": b'{"itemInfoEntries": {"\xff\xfe": {}}}',
    "empty file": b"",
    "NaN": b'{"itemInfoEntries": NaN}',
}
COMMANDS = {"print": ["print", "m.mlpackage"], "unpack": ["unpack", "m.mlpackage", "out"],
            "check": ["check", "m.mlpackage"], "textconv": ["textconv", "m.mlpackage"],
            "diff": ["diff", "m.mlpackage", "m.mlpackage"]}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_manifest_of_any_shape_is_one_clear_error(tmp_path, monkeypatch, capfd, shape, command):
    package = tmp_path / "m.mlpackage"
    shutil.copytree(PACKAGE, package)
    (package / "Manifest.json").write_bytes(SHAPES[shape])
    before = snapshot(tmp_path)
    monkeypatch.chdir(tmp_path)
    status = main(COMMANDS[command])
    out, err = capfd.readouterr()
    assert "internal error" not in out + err and "Traceback" not in out + err, out + err
    assert snapshot(tmp_path) == before  # nothing written, the package as it was
    if command == "textconv":  # git's textconv never fails: the reason is what it prints
        assert status in (0, None)
        assert out.startswith("# miltext: not shown as MIL text (") and "Manifest.json" in out.split("\n")[0], out
        return
    assert status == (2 if command == "diff" else 1), (out, err)   # diff's status for trouble is diff(1)'s
    if command == "check":   # check's diagnostics go to stdout, its tally to stderr
        assert err.strip() == "1 error, 0 warnings"
        said = out
    else:
        assert out == ""
        said = err
    lines = said.strip().split("\n")
    assert len(lines) == 1 and lines[0].startswith(os.path.join("m.mlpackage", "Manifest.json") + ": error: "), out + err


def test_a_manifest_with_a_byte_order_mark_reads(tmp_path, capfd):
    """Some editors start a JSON file with a UTF-8 byte-order mark: the manifest is still read."""
    package = tmp_path / "m.mlpackage"
    shutil.copytree(PACKAGE, package)
    assert main(["print", str(package)]) in (0, None)
    plain = capfd.readouterr().out
    (package / "Manifest.json").write_bytes(b"\xef\xbb\xbf" + json.dumps(_real()).encode())
    assert main(["print", str(package)]) in (0, None)
    assert capfd.readouterr().out == plain and plain.startswith("model(")


@pytest.mark.parametrize("shape,words", [
    ("list root", "not a package manifest (a JSON list, where an object with itemInfoEntries belongs)"),
    ("null root", "not a package manifest (a JSON null, where"),
    ("entries a string", "no itemInfoEntries (it is a JSON string, not an object)"),
    ("empty object", "no itemInfoEntries (it is missing)"),
    ("root a list", "no rootModelIdentifier (it is a JSON list, not a string)"),
    ("root points nowhere", "the root model 'no-such-item' is no item of itemInfoEntries"),
    ("entries without path", "has no item with a path"),
    ("not UTF-8", "not UTF-8 text (byte 0xff at offset 22)"),
    ("invalid JSON", "not valid JSON ("),
])
def test_the_error_says_what_is_wrong_with_the_manifest(tmp_path, monkeypatch, capfd, shape, words):
    package = tmp_path / "m.mlpackage"
    shutil.copytree(PACKAGE, package)
    (package / "Manifest.json").write_bytes(SHAPES[shape])
    monkeypatch.chdir(tmp_path)
    assert main(["print", "m.mlpackage"]) == 1
    assert words in capfd.readouterr().err
