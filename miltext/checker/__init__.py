"""`miltext check`: what a program that parses can still get wrong, as diagnostics.

One module per family of rules (names, structure, values, ops, inference), each with a RULES table
(rule -> severity) and a `check(context)`; `Diagnostic` is in diagnostics, text and JSON
output in render. docs/check.md describes every rule.
"""
from __future__ import annotations

import os

from ..bulk import bulk
from . import inference, model_section, names, ops, structure, values, weight_refs
from .context import Context
from .diagnostics import Diagnostic, in_source_order, with_file
from .weights import WeightFiles

FAMILIES = (names, structure, values, ops, inference, model_section, weight_refs)
RULES = {rule: severity for family in FAMILIES for rule, severity in family.RULES.items()}


def check(program, *, filename: str | None = None, source: str | None = None,
          weights: str | None = None, section=None, confine_refs: bool = False,
          ref_headers=None) -> list[Diagnostic]:
    """The diagnostics of a program, in source order.

    `filename` names the file in each diagnostic; `source` is the text the program was parsed
    from, which puts the caret under the very input at fault (without it, at the op); `weights`
    is the weights folder, an .mlpackage or a weight.bin, for checking blob values; `section`
    is the text's model section as the parser read it (`parse(..., with_model=True)`), checked
    against the program. `confine_refs` refuses weight references (npy(...), safetensors(...))
    that lead out of the file's folder; `ref_headers` (a model.weight_headers.Headers, which the
    language server keeps) holds the weight files' headers parsed by an earlier check."""
    weight_files = WeightFiles(weights) if weights is not None else None
    try:
        with bulk():    # many small objects (inferred types) and no cycles, as in parsing
            ctx = Context(program, source, weight_files, section)
            ctx.folder = os.path.dirname(os.path.abspath(filename)) if filename else None  # of npy(...) paths
            ctx.confine_refs, ctx.ref_headers = confine_refs, ref_headers
            for family in FAMILIES:
                family.check(ctx)
    finally:
        if weight_files is not None:
            weight_files.close()
    return with_file(in_source_order(ctx.diagnostics), filename)


__all__ = ["check", "Diagnostic", "RULES"]
