"""The Vim syntax (editors/vim), run headless by Debian's vim (`vim -Es`): a .mil file gets the
`mil` filetype from ftdetect, and the constructs of both dialects in tests/editors/ get their
syntax groups."""
import os
import re
import shutil
import subprocess

import pytest

from miltext.dtypes import NAMES
from support.editor_texts import DTYPE_NAMED_VARS, SAMPLES, dtype_named_places

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VIM_DIR = os.path.join(ROOT, "editors", "vim")

# Writes the filetype, then each line's syntax group per character, to $DUMP_OUT.
DUMP = """
let s:out = [&filetype]
for s:l in range(1, line('$'))
  let s:names = []
  for s:c in range(1, col([s:l, '$']) - 1)
    call add(s:names, synIDattr(synID(s:l, s:c, 1), 'name'))
  endfor
  call add(s:out, join(s:names, ' '))
endfor
call writefile(s:out, $DUMP_OUT)
qa!
"""


def syntax_groups(path: str, tmp_path) -> tuple[str, list[list[str]]]:
    """(filetype, the syntax group of each character of each line) as Vim sees the file."""
    vim = shutil.which("vim")
    if vim is None:
        pytest.fail("vim is not installed: apt-get install vim (make test installs it when run as root)")
    script, out = tmp_path / "dump.vim", tmp_path / "groups.txt"
    script.write_text(DUMP)
    run = subprocess.run([vim, "-Es", "-u", "NONE", "-i", "NONE", "-N", "--cmd", f"set rtp^={VIM_DIR}",
                          "--cmd", "filetype on", "--cmd", "syntax on", "-c", f"source {script}", path],
                         capture_output=True, text=True, env={**os.environ, "DUMP_OUT": str(out)}, timeout=60)
    assert run.returncode == 0 and out.exists(), run.stdout + run.stderr
    filetype, *lines = out.read_text().split("\n")
    return filetype, [line.split(" ") if line else [] for line in lines]


GOLDEN = {
    "sample.mil": [
        (1, "# One of each construct", "milComment"),
        (2, "model", "milKeyword"),
        (2, "specificationVersion", "milKey"),
        (3, "input", "milKeyword"),
        (3, "%x", "milVar"),
        (4, "output", "milKeyword"),
        (5, "metadata", "milOp"),
        (8, "program", "milKeyword"),
        (8, "version", "milKeyword"),
        (8, "1", "milNumber"),
        (8, '"tab', "milString"),
        (8, "\\t", "milEscape"),
        (8, '\\"', "milEscape"),
        (8, "\\x41", "milEscape"),
        (8, "buildInfo", "milKey"),
        (10, "main", "milFunction"),
        (10, "CoreML8", "milOpset"),
        (10, "%x", "milVar"),
        (10, "fp32", "milDtype"),
        (11, '%"odd name"', "milVar"),
        (11, "State", "milType"),
        (12, "List", "milType"),
        (12, "int32", "milDtype"),
        (13, "block0", "milLabel"),
        (14, "const", "milOp"),
        (14, "val", "milKey"),
        (14, "blob", "milBlob"),
        (14, "64", "milNumber"),
        (15, "0x1.8p1", "milFloat"),
        (15, "-inf", "milFloat"),
        (15, "nan", "milFloat"),
        (15, "nan(0x7fc00001)", "milFloat"),
        (15, "1e-05", "milFloat"),
        (16, "0x1F", "milNumber"),
        (16, "-7", "milNumber"),
        (17, 'b64"EDJUdpi63P4QMlR2mLrc/hAyVHaYutz+EDJUdpi63P4A"', "milB64"),
        (18, "Tuple", "milType"),
        (18, "Dict", "milType"),
        (18, "string", "milDtype"),
        (19, "True", "milBoolean"),
        (20, "%p", "milVar"),
        (20, "# a comment after code", "milComment"),
        (21, "block1", "milLabel"),
        (22, "relu", "milOp"),
        (23, "->", "milOperator"),
        (26, "write_state", "milOp"),
        (27, '"my.custom op"', "milOp"),
        (27, '"key-with-dash"', "milKey"),
        (27, "1.5", "milFloat"),
    ],
    "sample_modelmil.mil": [
        (1, "program", "milKeyword"),
        (1, "1.3", "milFloat"),
        (2, "buildInfo", "milKey"),
        (2, "dict", "milType"),
        (2, "string", "milDtype"),
        (4, "func", "milKeyword"),
        (4, "main", "milFunction"),
        (4, "ios18", "milOpset"),
        (4, "tensor", "milType"),
        (4, "x", "milVar"),
        (4, "state", "milType"),
        (4, "k_cache", "milVar"),
        (5, "int32", "milDtype"),
        (5, "groups", "milVar"),
        (5, "const", "milOp"),
        (5, "name", "milKey"),
        (5, '"groups"', "milString"),
        (6, "w", "milVar"),
        (6, "BLOBFILE", "milBlob"),
        (6, "offset", "milKey"),
        (6, "uint64", "milDtype"),
        (7, "0x1.f0a3d8p-1", "milFloat"),
        (7, "-inf", "milFloat"),
        (8, '\\"', "milEscape"),
        (8, "true", "milBoolean"),
        (9, "y_1", "milVar"),
        (9, "topk", "milOp"),
        (9, "groups", "milVar"),  # a bare name bound to an input: a var
        (12, "block", "milKeyword"),
        (14, "block", "milKeyword"),
        (14, "a", "milVar"),
        (16, "->", "milOperator"),
    ],
}


@pytest.mark.parametrize("sample", sorted(GOLDEN))
def test_syntax_groups(sample, tmp_path):
    path = os.path.join(SAMPLES, sample)
    filetype, groups = syntax_groups(path, tmp_path)
    assert filetype == "mil"
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    wrong, at = [], {}
    for number, fragment, group in GOLDEN[sample]:
        start = lines[number - 1].index(fragment, at.get(number, 0))
        at[number] = end = start + len(fragment)
        found = set(groups[number - 1][start:end])
        if found != {group}:
            wrong.append(f"{sample}:{number}: {fragment!r} is {sorted(found)}, not {group}")
    assert not wrong, "\n".join(wrong)


def test_every_dtype_is_a_dtype(tmp_path):
    dtypes = [*NAMES, "dtype99"]
    path = tmp_path / "dtypes.mil"
    path.write_text("".join(f"%x: (2, {d}) = cast(dtype={d}(1))\ntensor<{d}, [2]> x = {d}(1);\n" for d in dtypes))
    _, groups = syntax_groups(str(path), tmp_path)
    lines = path.read_text().split("\n")
    for d, line, names in zip([d for d in dtypes for _ in (0, 1)], lines, groups):
        spans = [i for i in range(len(line)) if line.startswith(d, i) and line[i - 1] in " (<="]
        assert len(spans) == 2 and all(set(names[i:i + len(d)]) == {"milDtype"} for i in spans), line


@pytest.mark.parametrize("name", sorted(DTYPE_NAMED_VARS))
def test_a_var_named_like_a_dtype_is_a_var(name, tmp_path):
    text, expected = DTYPE_NAMED_VARS[name]
    path = tmp_path / name
    path.write_text(text)
    _, groups = syntax_groups(str(path), tmp_path)
    for line, start, end, kind in dtype_named_places(text, expected):
        found = set(groups[line][start:end])
        assert found <= ({"milVar", "milOutputName"} if kind == "var" else {"milDtype"}) and found, \
            (name, line, text.split("\n")[line][start:end], found)


def test_no_unbounded_look_behind():
    # Vim tries an unbounded look-behind at every earlier place of the line: slow on long lines
    with open(os.path.join(VIM_DIR, "syntax", "mil.vim"), encoding="utf-8") as f:
        source = f.read()
    assert not re.findall(r"@<[=!]", source)


def test_ops_vars_and_functions_are_linked_to_groups_of_their_own():
    # Vim's default colour schemes link Function to Identifier: they must not share it
    with open(os.path.join(VIM_DIR, "syntax", "mil.vim"), encoding="utf-8") as f:
        links = dict(re.findall(r"^hi def link (\w+) (\w+)", f.read(), re.M))
    shown = {group: "Identifier" if links[group] == "Function" else links[group] for group in ("milOp", "milVar", "milFunction")}
    assert len(set(shown.values())) == 3, shown
