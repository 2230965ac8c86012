"""The one verification `check`, `build` and `pack` share: a model's diagnostics as `check`
finds them, with the text they point into, and the weights folder found the way `build` finds
it (`weights/` beside the text, or inside the package)."""
from __future__ import annotations

import os

CHECK_RATE = 8e6    # bytes of text checked per second, roughly: what the progress bar expects


def weights_beside(model) -> str | None:
    """The weights folder of a model as it was read: `@model_path/weights` when it is there."""
    folder = os.path.join(model.folder, "weights") if model.folder else None
    return folder if folder and os.path.isdir(folder) else None


def diagnostics(model, path: str, weights: str | None = None, progress=None) -> tuple[list, str]:
    """What check finds in `model` (read from `path`), and the text it points into: the text
    the model was read from, or for a model or a serialized program, its canonical text (as
    `miltext print` shows it). `weights` is the weights folder blob values are checked against:
    without it, the one beside the model; "" for none."""
    from ..checker import check
    text, section, program = model.text, model.section, None
    if text is None:
        from ..model.text import model_text
        from ..text.mil.parser import parse
        text = model_text(model)
        section, program = parse(text, path, with_model=True)
    else:
        program = model.program
    if progress is not None:
        progress.stage("checking", seconds=len(text) / CHECK_RATE)
    if weights is None:
        weights = weights_beside(model)
    found = check(program, filename=path, source=text, section=section, weights=weights or None)
    return found, text


def refusal(path: str, found: list, text: str) -> str | None:
    """What a command that writes says when `found` holds an error (every diagnostic, then the
    count), or None when there is none: then it may write. Besides errors, the warnings Core ML
    cannot load past (an unknown op, a name defined twice) refuse too: Diagnostic.blocks_build;
    for the command that refuses, they are errors, and say so."""
    from dataclasses import replace

    from ..checker.render import render_text, summary
    if not any(d.blocks_build for d in found):
        return None
    found = [replace(d, severity="error") if d.blocks_build else d for d in found]
    return render_text(found, {path: text}) + summary(found) + \
        "; nothing written (--no-verify writes it anyway)\n"
