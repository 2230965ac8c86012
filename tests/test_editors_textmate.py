"""The VS Code grammar (editors/vscode/syntaxes/mil.tmLanguage.json), run by the real
vscode-textmate and vscode-oniguruma from npm (editors/vscode/test, `npm ci` there; `make test`
does it): every example and corpus text in both dialects tokenizes, nothing in them falls back
to plain text, and golden lines of tests/editors/ get the scopes they should.

Plain text, precisely: a character is plain when no scope applies to it but the root
`source.mil` (and `meta.*` scopes, which only group and colour nothing). Every character that
is not white space must have a scope of its own; the grammar gives punctuation its
`punctuation.*` scopes, so the set of characters allowed to stay plain is empty.
"""
import json
import os
import re
import shutil
import subprocess

import pytest

import miltext
from miltext.dtypes import NAMES
from support.editor_texts import DTYPE_NAMED_VARS, SAMPLES, dtype_named_places, printed_texts, text_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VSCODE = os.path.join(ROOT, "editors", "vscode")
HARNESS = os.path.join(VSCODE, "test")
GRAMMAR = os.path.join(VSCODE, "syntaxes", "mil.tmLanguage.json")
ALLOWED_PLAIN = ""


def tokenize(paths: list[str]) -> dict:
    """{path: [(line, [(start, end, scopes), ...]), ...]} from the Node harness."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed; the TextMate grammar test needs Node.js")
    if not os.path.isdir(os.path.join(HARNESS, "node_modules", "vscode-textmate")):
        pytest.fail("vscode-textmate is not installed: run `npm ci --prefix editors/vscode/test` "
                    "(make test does)")
    run = subprocess.run([node, os.path.join(HARNESS, "tokenize.js"), GRAMMAR, *paths],
                         capture_output=True, text=True, encoding="utf-8")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def corpus_texts(folder) -> list[str]:
    paths = text_files()
    for name, text in printed_texts():
        path = folder / name
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def tokens(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("texts")
    return tokenize([dtype_lines(folder)] + corpus_texts(folder))


def dtype_lines(folder) -> str:
    """Every dtype miltext knows, as each dialect writes it."""
    path = folder / "dtypes.mil"
    path.write_text("".join(f"%x: (2, {d}) = cast(dtype={d}(1))\ntensor<{d}, [2]> x = {d}(1);\n"
                            for d in [*NAMES, "dtype99"]))
    return str(path)


def own_scopes(scopes: list[str]) -> list[str]:
    return [s for s in scopes if s != "source.mil" and not s.startswith("meta.")]


def test_the_miltext_sample_is_mil():
    assert miltext.load(os.path.join(SAMPLES, "sample.mil")).functions


def test_every_dtype_is_a_dtype(tokens):
    (path,) = [p for p in tokens if p.endswith("dtypes.mil")]
    for line, toks in tokens[path]:
        dtypes = [line[s:e] for s, e, scopes in toks if "storage.type.dtype.mil" in scopes]
        assert line == "" or len(dtypes) == 2 and dtypes[0] == dtypes[1] and line.count(dtypes[0]) == 2, line


def test_every_text_tokenizes(tokens):
    assert len(tokens) > 80
    for path, lines in tokens.items():
        with open(path, encoding="utf-8", newline="") as f:
            assert [line for line, _ in lines] == re.split(r"\r\n|\r|\n", f.read()), path
        for line, toks in lines:  # tokens cover each line, end to end
            assert [t[0] for t in toks[1:]] == [t[1] for t in toks[:-1]], (path, line)
            assert not line or (toks[0][0] == 0 and toks[-1][1] == len(line)), (path, line)


def test_nothing_falls_back_to_plain_text(tokens):
    plain = []
    for path, lines in tokens.items():
        for number, (line, toks) in enumerate(lines, 1):
            for start, end, scopes in toks:
                text = line[start:end]
                if not own_scopes(scopes) and any(not c.isspace() and c not in ALLOWED_PLAIN for c in text):
                    plain.append(f"{os.path.basename(path)}:{number}:{start + 1}: {text!r} in {line.strip()[:80]!r}")
    assert not plain, "\n".join(plain[:20])


def test_only_python_object_reprs_are_marked_invalid(tokens):
    # coremltools prints `<... object at 0x...>` where it has no value; MIL cannot hold it.
    invalid = [(path, line[start:end]) for path, lines in tokens.items() for line, toks in lines
               for start, end, scopes in toks if any(s.startswith("invalid.") for s in scopes)]
    assert invalid
    assert all(" object at 0x" in text and path.endswith(".txt") for path, text in invalid), invalid[:5]


# Golden lines: (line, fragment, scope). Fragments are found in order along each line; every
# character of a fragment must carry the scope.
GOLDEN = {
    "sample.mil": [
        (1, "#", "punctuation.definition.comment.mil"),
        (1, "One of each construct", "comment.line.number-sign.mil"),
        (2, "model", "keyword.other.model.mil"),
        (2, "specificationVersion", "variable.parameter.mil"),
        (3, "input", "keyword.other.feature.mil"),
        (3, "%x", "variable.other.declaration.mil"),
        (3, "shortDescription", "variable.parameter.mil"),
        (4, "output", "keyword.other.feature.mil"),
        (5, "metadata", "support.function.op.mil"),
        (5, "author", "variable.parameter.mil"),
        (8, "program", "keyword.other.program.mil"),
        (8, "version", "keyword.other.mil"),
        (8, "1", "constant.numeric.integer.decimal.mil"),
        (8, "doc", "keyword.other.mil"),
        (8, '"tab', "string.quoted.double.mil"),
        (8, "\\t", "constant.character.escape.mil"),
        (8, '\\"', "constant.character.escape.mil"),
        (8, "\\x41", "constant.character.escape.mil"),
        (8, "buildInfo", "variable.parameter.mil"),
        (8, '"coremltools-version"', "string.quoted.double.mil"),
        (10, "main", "entity.name.type.function.mil"),
        (10, "CoreML8", "entity.name.namespace.opset.mil"),
        (10, "%x", "variable.other.declaration.mil"),
        (10, "1", "constant.numeric.integer.decimal.mil"),
        (10, "?", "constant.language.dimension.unknown.mil"),
        (10, "fp32", "storage.type.dtype.mil"),
        (11, '%"odd name"', "variable.other.declaration.mil"),
        (11, "fp16", "storage.type.dtype.mil"),
        (11, "State", "storage.modifier.mil"),
        (12, "List", "storage.type.mil"),
        (12, "int32", "storage.type.dtype.mil"),
        (13, "block0", "entity.name.label.mil"),
        (14, "const", "support.function.op.mil"),
        (14, "val", "variable.parameter.mil"),
        (14, "blob", "keyword.other.blob.mil"),
        (14, "64", "constant.numeric.integer.decimal.mil"),
        (14, '"w"', "string.quoted.double.mil"),
        (15, "0x1.8p1", "constant.numeric.float.hex.mil"),
        (15, "-inf", "constant.numeric.float.special.mil"),
        (15, "nan", "constant.numeric.float.special.mil"),
        (15, "nan(0x7fc00001)", "constant.numeric.float.special.mil"),
        (15, "1e-05", "constant.numeric.float.decimal.mil"),
        (16, "0x1F", "constant.numeric.integer.hex.mil"),
        (16, "-7", "constant.numeric.integer.decimal.mil"),
        (17, "b64", "string.other.base64.mil"),
        (17, "EDJUdpi63P4QMlR2mLrc/hAyVHaYutz+EDJUdpi63P4A", "string.other.base64.mil"),
        (18, "Tuple", "storage.type.mil"),
        (18, "Dict", "storage.type.mil"),
        (18, "string", "storage.type.dtype.mil"),
        (18, "0.5", "constant.numeric.float.decimal.mil"),
        (19, "True", "constant.language.boolean.mil"),
        (20, "cond", "support.function.op.mil"),
        (20, "pred", "variable.parameter.mil"),
        (20, "%p", "variable.other.mil"),
        (20, "# a comment after code", "comment.line.number-sign.mil"),
        (21, "block1", "entity.name.label.mil"),
        (22, "relu", "support.function.op.mil"),
        (22, "%x", "variable.other.mil"),
        (23, "->", "keyword.operator.arrow.mil"),
        (23, "%y", "variable.other.mil"),
        (26, "write_state", "support.function.op.mil"),
        (26, '%"odd name"', "variable.other.mil"),
        (27, '"my.custom op"', "support.function.op.mil"),
        (27, '"key-with-dash"', "variable.parameter.mil"),
        (27, "1.5", "constant.numeric.float.decimal.mil"),
        (27, "axis", "variable.parameter.mil"),
    ],
    "sample_modelmil.mil": [
        (1, "program", "keyword.other.program.mil"),
        (1, "1.3", "constant.numeric.float.decimal.mil"),
        (2, "buildInfo", "variable.parameter.mil"),
        (2, "dict", "storage.type.mil"),
        (2, "string", "storage.type.dtype.mil"),
        (2, '"coremlc-version"', "string.quoted.double.mil"),
        (4, "func", "keyword.other.func.mil"),
        (4, "main", "entity.name.type.function.mil"),
        (4, "ios18", "entity.name.namespace.opset.mil"),
        (4, "tensor", "storage.type.mil"),
        (4, "fp16", "storage.type.dtype.mil"),
        (4, "?", "constant.language.dimension.unknown.mil"),
        (4, "x", "variable.other.declaration.mil"),
        (4, "state", "storage.type.mil"),
        (4, "k_cache", "variable.other.declaration.mil"),
        (4, "FlexibleShapeInformation", "variable.parameter.mil"),
        (4, "tuple", "storage.type.mil"),
        (4, "list", "storage.type.mil"),
        (4, '"RangeDims"', "string.quoted.double.mil"),
        (5, "int32", "storage.type.dtype.mil"),
        (5, "groups", "variable.other.declaration.mil"),
        (5, "const", "support.function.op.mil"),
        (5, "name", "variable.parameter.mil"),
        (5, "string", "storage.type.dtype.mil"),
        (5, '"groups"', "string.quoted.double.mil"),
        (5, "int32", "storage.type.dtype.mil"),
        (5, "1", "constant.numeric.integer.decimal.mil"),
        (6, "w", "variable.other.declaration.mil"),
        (6, "BLOBFILE", "keyword.other.blob.mil"),
        (6, "path", "variable.parameter.mil"),
        (6, '"@model_path/weights/weight.bin"', "string.quoted.double.mil"),
        (6, "offset", "variable.parameter.mil"),
        (6, "uint64", "storage.type.dtype.mil"),
        (6, "64", "constant.numeric.integer.decimal.mil"),
        (7, "0x1.f0a3d8p-1", "constant.numeric.float.hex.mil"),
        (7, "-inf", "constant.numeric.float.special.mil"),
        (7, "nan", "constant.numeric.float.special.mil"),
        (8, '\\"', "constant.character.escape.mil"),
        (8, "\\n", "constant.character.escape.mil"),
        (8, "true", "constant.language.boolean.mil"),
        (8, "false", "constant.language.boolean.mil"),
        (9, "y_0", "variable.other.declaration.mil"),
        (9, "uint16", "storage.type.dtype.mil"),
        (9, "y_1", "variable.other.declaration.mil"),
        (9, "topk", "support.function.op.mil"),
        (9, "k", "variable.parameter.mil"),
        (9, "groups", "variable.other.mil"),
        (10, "write_state", "support.function.op.mil"),
        (10, "y_0", "variable.other.mil"),
        (10, "k_cache", "variable.other.mil"),
        (11, "z", "variable.other.declaration.mil"),
        (11, "cond", "support.function.op.mil"),
        (12, "block", "keyword.other.block.mil"),
        (14, "block", "keyword.other.block.mil"),
        (14, "a", "variable.other.declaration.mil"),
        (15, "a", "variable.other.mil"),
        (16, "->", "keyword.operator.arrow.mil"),
        (16, "y_0", "variable.other.mil"),
        (16, ";", "punctuation.terminator.statement.mil"),
    ],
}


@pytest.mark.parametrize("sample", sorted(GOLDEN))
def test_golden_lines(tokens, sample):
    lines = tokens[os.path.join(SAMPLES, sample)]
    wrong, at = [], {}
    for number, fragment, scope in GOLDEN[sample]:
        line, toks = lines[number - 1]
        start = line.index(fragment, at.get(number, 0))
        at[number] = end = start + len(fragment)
        for s, e, scopes in toks:
            if s < end and e > start and scope not in scopes:
                wrong.append(f"{sample}:{number}: {line[s:e]!r} (in {fragment!r}) has {own_scopes(scopes)}, not {scope}")
    assert not wrong, "\n".join(wrong)


def test_extension_registers_the_language_grammar_and_server():
    with open(os.path.join(VSCODE, "package.json"), encoding="utf-8") as f:
        manifest = json.load(f)
    contributes = manifest["contributes"]
    (language,) = contributes["languages"]
    assert language["id"] == "mil" and ".mil" in language["extensions"]
    with open(os.path.join(VSCODE, language["configuration"]), encoding="utf-8") as f:
        configuration = json.load(f)
    assert configuration["comments"]["lineComment"] == "#"
    assert ["(", ")"] in configuration["brackets"]
    assert {"open": '"', "close": '"', "notIn": ["string"]} in configuration["autoClosingPairs"]
    (grammar,) = [g for g in contributes["grammars"] if g.get("language")]
    with open(os.path.join(VSCODE, grammar["path"]), encoding="utf-8") as f:
        assert json.load(f)["scopeName"] == grammar["scopeName"] == "source.mil"
    assert grammar["language"] == "mil"
    assert manifest["main"] == "./dist/extension.js"   # its bundle: tests/test_vscode_extension.py makes it
    main = os.path.join(VSCODE, "extension.js")
    check = subprocess.run([shutil.which("node") or "node", "--check", main], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    settings = contributes["configuration"]["properties"]   # it starts `miltext lsp`
    assert (settings["miltext.server.command"]["default"], settings["miltext.server.args"]["default"]) == ("miltext", ["lsp"])
    with open(main, encoding="utf-8") as f:
        assert "config.get('args', ['lsp'])" in f.read()


def test_a_var_named_like_a_dtype_is_a_var(tmp_path):
    paths = {}
    for name, (text, _) in DTYPE_NAMED_VARS.items():
        paths[name] = tmp_path / name
        paths[name].write_text(text)
    found = tokenize([str(p) for p in paths.values()])
    for name, (text, expected) in DTYPE_NAMED_VARS.items():
        lines = found[str(paths[name])]
        for line, start, end, kind in dtype_named_places(text, expected):
            scopes = {tuple(s) for a, b, s in lines[line][1] if a < end and b > start}
            (scope,) = {s[-1] for s in scopes}
            assert scope.startswith("variable.other" if kind == "var" else "storage.type.dtype"), (name, line, scope)


def test_ops_vars_and_functions_get_scopes_themes_colour_apart(tokens):
    # Dark+ and Light+ colour entity.name.function and support.function alike: a function's
    # name is entity.name.type.function, an op support.function, a var variable.
    lines = tokens[os.path.join(SAMPLES, "sample.mil")]
    def scope(line, fragment):
        text, toks = lines[line - 1]
        start = text.index(fragment)
        return next(s[-1] for a, b, s in toks if a <= start < b)
    assert scope(10, "main").startswith("entity.name.type")
    assert scope(22, "relu").startswith("support.function") and scope(22, "%").startswith("variable")
