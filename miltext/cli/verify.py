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
        from ..text.dialects import parse
        text = model_text(model)
        section, program = parse(text, path, with_model=True)
    else:
        program = model.program
    if progress is not None:
        progress.stage("checking", seconds=len(text) / CHECK_RATE)
    if weights is None:
        weights = weights_beside(model)
    found = check(program, filename=path, source=text, section=section, weights=weights or None,
                  confine_refs=model.confine_refs)
    return found, text


def report(path: str, found: list, text: str) -> tuple[bool, str]:
    """Whether a command that writes must refuse to, and what it says: it refuses exactly what
    `check` calls an error (so a CI step gated on `check` passes only what `build` writes), and
    shows every diagnostic as `check` does, warnings too, then the count; "" when none."""
    from ..checker.render import render_text, summary
    refused = any(d.is_error for d in found)
    if not found:
        return False, ""
    ending = "; nothing written (--no-verify writes it anyway)" if refused else ""
    return refused, render_text(found, {path: text}) + summary(found) + ending + "\n"
