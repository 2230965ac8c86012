"""The language server's incremental analysis against a fresh one: after each of many random
edits (lines typed into, broken, duplicated, taken out, added), the analysis built from the one
before gives the same parse errors, the same check findings and the same program as an analysis
of the text from nothing, and the same answers to definition and references. In both dialects, on corpus texts with nested blocks."""
import os
import random
import re

import pytest

import miltext
from miltext.lsp.analysis import Analysis
from support.corpus import CORPUS
from support.texts import GOOD

TEXTS = {
    "good": GOOD,
    "cond_basic": os.path.join(CORPUS, "coremltools", "cond_basic.pymil.txt"),
    "decoder_lstm": os.path.join(CORPUS, "modelmil", "04_ios17_decoder_lstm.mil"),
    "add_model": os.path.join(CORPUS, "modelmil", "01_ios16_add_model.mil"),
}


def text_of(name: str) -> str:
    found = TEXTS[name]
    if "\n" in found:
        return found
    with open(found, encoding="utf-8") as f:
        return f.read()


def edited(rng: random.Random, text: str) -> str:
    lines = text.split("\n")
    n = rng.randrange(len(lines))
    line = lines[n]
    kind = rng.randrange(7)
    if kind == 0 and line:                       # a character taken out (a bracket, a comma...)
        i = rng.randrange(len(line))
        lines[n] = line[:i] + line[i + 1:]
    elif kind == 1:                              # a character typed
        i = rng.randrange(len(line) + 1)
        lines[n] = line[:i] + rng.choice('q(),%"=_1 ') + line[i:]
    elif kind == 2:
        del lines[n]
    elif kind == 3:
        lines.insert(n, line)                    # duplicated: a redefinition
    elif kind == 4:
        lines.insert(n, "")
    elif kind == 5 and "name" in line:           # an op renamed the way one types it
        lines[n] = line.replace("name", "nam", 1)
    else:
        lines[n] = line.replace("x", "y", 1)
    return "\n".join(lines)


def summary(a: Analysis, complete: bool) -> tuple:
    program = None
    if a.program is not None and not a.reading.errors:
        try:
            program = miltext.dumps(a.program, "modelmil" if a.modelmil else "mil")
        except ValueError:
            program = "unprintable"
    return ([(f.severity, f.range, f.message, f.code) for f in a.findings(complete)], program, names(a))


def names(a: Analysis) -> list:
    """What definition and references answer at each name written in the text (the index
    keeps which ops declare each name from one analysis to the next)."""
    out = []
    for n, line in enumerate(a.source.lines):
        for m in re.finditer(r'%?[A-Za-z_][\w.]*', line):
            pos = (n, m.start() + 1)
            out.append((pos, a.definition(pos), [(o.start, o.declares) for o in a.references(pos)]))
    return out


def elsewhere(found: list, first: int, end: int) -> list:
    """What names() found, without what is on lines [first, end)."""
    return [(pos, d, [r for r in refs if not first <= r[0][0] < end]) for pos, d, refs in found
            if not first <= pos[0] < end]


@pytest.mark.parametrize("name", sorted(TEXTS))
def test_incremental_analysis_is_the_fresh_one(name):
    rng = random.Random(name)
    original = text_of(name)
    for walk in range(6):
        text, before = original, Analysis(original)
        before.findings()
        for step in range(12):
            text = edited(rng, text) if rng.random() < 0.8 else original
            now = Analysis(text, before)
            fresh = Analysis(text)
            if now.reading.kept:   # the frame broken in place: the analysis before stands, with one error
                of_ops = [e for p in now.reading.pieces for e in p.errors] + [now.reading.blob_error]
                new = [e for e in now.reading.errors if e not in of_ops]
                # the frame's error is the whole text's (unless the whole text's parse stopped before it)
                assert len(new) == 1 and (new[0] in fresh.reading.errors or fresh.reading.errors[-1] < new[0])
                first, end, _ = now.reading.changed   # the names elsewhere answer as before
                assert elsewhere(names(now), first, end) == elsewhere(names(before), first, end), (name, walk, step)
            else:
                assert summary(now, False) == summary(fresh, True), (name, walk, step, text)
            before = now


def test_changed_lines_of_texts_is_that_of_their_lines():
    """The lines an edit changed, worked out from two texts' line offsets (the quick way for
    typing), are those a comparison line by line finds."""
    from miltext.lsp.document import changed_lines
    from miltext.lsp.document_text import Lines
    rng = random.Random(17)
    words = ["", "a", "ab", "ba", "%x", "}"]
    for _ in range(3000):
        old = [rng.choice(words) for _ in range(rng.randrange(1, 8))]
        new = list(old)
        i = rng.randrange(len(new))
        kind = rng.randrange(4)
        if kind == 0:
            new[i] += rng.choice(["a", "b"])      # a line longer
        elif kind == 1:
            new[i] = new[i][:-1]                  # shorter
        elif kind == 2:
            new[i] = rng.choice(words)            # another line, maybe as long
        else:
            new = [rng.choice(words) for _ in range(len(old))]
        a, b = "\n".join(old), "\n".join(new)
        assert list(Lines(a)) == old and [Lines(a)[n] for n in range(len(old))] == old
        assert changed_lines(Lines(a), Lines(b)) == changed_lines(old, new), (old, new)


def _blobs(program) -> list:
    from miltext.ir import Blob
    from miltext.text.blob_layout import values
    return [(v.data.offset, v.data.file) for v, _ in values(program) if isinstance(v.data, Blob)]


def test_implied_blob_offsets_are_those_of_the_whole_text():
    """A converted model's canonical text writes its weights as `blob`, each offset following
    from the blobs before it. The server reads such a text op by op: the offsets are still the
    whole text's, after an open, an edit of a weight's line, a weight put in before the others
    (every offset after it moves) and taken out again."""
    with open(os.path.join(CORPUS, "conversions", "convnext.pb"), "rb") as f:
        converted = miltext.Program.from_proto(f.read())
    text = miltext.dumps(converted)
    lines = text.split("\n")
    first = next(n for n, line in enumerate(lines) if "(blob)" in line)
    renamed = list(lines)
    renamed[first] = renamed[first].replace('name="', 'name="q', 1)
    inserted = lines[:first] + ['    %extra_w: (4, fp32) = const(val=(4, fp32)(blob), name="extra_w")'] + lines[first:]
    a = Analysis(text)
    assert len(a.reading.pieces) < 200   # read op by op, not as a whole
    assert _blobs(a.program) == _blobs(converted) and len(_blobs(converted)) > 10
    for edited_text in ("\n".join(renamed), "\n".join(inserted), text):
        a = Analysis(edited_text, a)
        assert _blobs(a.program) == _blobs(miltext.loads(edited_text)), edited_text[:200]
        assert not a.reading.errors and not a.findings(complete=True)
    assert _blobs(miltext.loads("\n".join(inserted)))[1][0] != _blobs(converted)[0][0]   # they moved


def test_a_blob_whose_offset_cannot_follow_is_one_error_at_its_op():
    text = ('main[CoreML7]() {\n  block0() {\n'
            '    %a: (?, fp32) = const(val=(?, fp32)(blob(64)), name="a")\n'
            '    %b: (4, fp32) = const(val=(4, fp32)(blob), name="b")\n'
            '  } -> (%b)\n}\n')
    with pytest.raises(miltext.ParseError) as e:
        miltext.loads(text)
    a = Analysis(text)
    assert a.reading.errors == [(e.value.line, e.value.column, e.value.message)]
    fixed = text.replace("(4, fp32)(blob)", "(4, fp32)(blob(128))")
    assert not Analysis(fixed, a).reading.errors
