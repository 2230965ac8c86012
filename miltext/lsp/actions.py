"""Quick fixes: a diagnostic's suggestion put in place ("did you mean"), and a required input an
op lacks added to its call. Refactors at a var, made as `miltext edit` makes them (miltext.edit):
expose it as an output (the function's outputs and the model section's), rename an input; and
a rename that renames the model section's features with the var."""
from __future__ import annotations

import re
from dataclasses import dataclass

from . import ophelp

# check words a suggestion as `...; did you mean 'relu'?` (or "relu", or a %name bare)
_DID_YOU_MEAN = re.compile(r"did you mean (?:'([^']+)'|\"([^\"]+)\"|([^\s?']+))\?")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')


@dataclass
class Fix:
    title: str
    range: tuple       # (start, end), 0-based code points
    text: str
    diagnostic: object = None


def suggestion_in(message: str) -> str | None:
    """The replacement a diagnostic's message suggests, when it has one."""
    m = _DID_YOU_MEAN.search(message)
    return next((g for g in m.groups() if g), None) if m else None


def fixes(analysis, diagnostics: list) -> list[Fix]:
    """The quick fixes for the client's diagnostics (LSP dicts or objects with range, code,
    message and data, places as (line, column) pairs)."""
    out = []
    for d in diagnostics:
        suggestion = (d.data or {}).get("suggestion") if isinstance(d.data, dict) else None
        suggestion = suggestion or suggestion_in(d.message)
        if suggestion:
            out.append(Fix(f"Change to {suggestion}", d.range, suggestion, d))
        if d.code == "missing-input":
            out += _missing_inputs(analysis, d)
    return out


def _missing_inputs(analysis, d) -> list[Fix]:
    """One fix for each required input the op on the diagnostic's line lacks and a var of the
    same name can give: `key=%key` put before the call's closing parenthesis. Where no such var
    is in scope there is no fix: one that wrote an undefined name would trade one error for another."""
    line_no = d.range[0][0]
    i = _piece_at(analysis, line_no)
    if i is None:
        return []
    p = analysis.reading.pieces[i]
    if not p.ops:
        return []
    op = p.ops[0]
    opset = ophelp.opset_at(analysis.program, line_no)
    close = _call_end(analysis, p.start, p.end)
    if close is None:
        return []
    out = []
    in_scope = {d.name for d in analysis.index.visible(close)}
    for spec in ophelp.inputs(op.type, opset):
        if spec["optional"] or spec["name"] in op.inputs or spec["name"] in op.attributes:
            continue
        if spec["name"] not in in_scope:
            continue
        key = spec["name"]
        before = analysis.source.line(close[0])[:close[1]].rstrip()
        sep = "" if before.endswith("(") else ", "
        value = key if analysis.modelmil else "%" + key
        text = f"{sep}{key} = {value}" if analysis.modelmil else f"{sep}{key}={value}"
        out.append(Fix(f"Add the required input {key}", (close, close), text, d))
    return out


def _piece_at(analysis, line: int) -> int | None:
    from bisect import bisect_right
    starts = analysis.index._piece_starts
    i = bisect_right(starts, line) - 1
    if i >= 0 and line < analysis.reading.pieces[i].end:
        return i
    return None


def _call_end(analysis, start: int, end: int) -> tuple | None:
    """The place of the closing parenthesis of the first op call in lines [start, end)."""
    m = None
    for n in range(start, end):
        line = analysis.source.line(n)
        m = ophelp.OP_TYPE.search(line)
        if m:
            break
    if m is None:
        return None
    return _closing(analysis, (n, m.end()), end)


def _closing(analysis, after: tuple, end: int) -> tuple | None:
    """The place of the parenthesis closing the one just before `after`, on a line before `end`."""
    depth, text_line, column = 1, *after
    while text_line < end:
        line = _without_strings(analysis.source.line(text_line))
        for c in range(column, len(line)):
            depth += (line[c] == "(") - (line[c] == ")")
            if depth == 0:
                return (text_line, c)
        text_line, column = text_line + 1, 0
    return None


def _without_strings(line: str) -> str:
    """The line with its strings blanked out (a bracket in one is no bracket)."""
    return _STRING.sub(lambda s: " " * len(s.group()), line)


# ---- refactors at a var -----------------------------------------------------------------------------

@dataclass
class Refactor:
    title: str
    edits: list                      # ((start, end), text), places in code points
    disabled: str | None = None      # why it cannot be made (what `miltext edit` says)
    rename_at: tuple | None = None   # a rename of the var here, for the client to ask its new name


def refactors(analysis, pos: tuple) -> list[Refactor]:
    """The refactors of the var at `pos`: expose it as an output, rename it when it is an input."""
    found = analysis.lookup(pos)
    if found is None or found[1] is None or analysis.reading.errors:
        return []
    decl = found[1]
    fn_name, fn = _function_at(analysis, decl.start[0])
    if fn is None:
        return []
    written = _written(analysis, decl.name)
    if any(v is decl.var for v in fn.inputs):
        return [Refactor(f"Rename input {written}", [], rename_at=decl.start)]
    return [_expose(analysis, fn_name, fn, decl, written)]


def rename_edits(analysis, pos: tuple, new_name: str) -> list | None:
    """analysis.rename's edits, and those renaming the model section's features (and classifier
    names) that name the var, as `miltext edit --rename-var` renames them."""
    edits = analysis.rename(pos, new_name)
    if not edits:
        return edits
    decl = analysis.lookup(pos)[1]
    fn_name, fn = _function_at(analysis, decl.start[0])
    if fn is None or not _of_top_block(fn, decl.var):
        return edits
    name = analysis._written_name(new_name)[0]
    return edits + _section_renames(analysis, fn_name, decl.name, name)


def _expose(analysis, fn_name: str, fn, decl, written: str) -> Refactor:
    """--expose's edit in text: the var added to the top block's outputs and, in each description
    of the function in the model section, an output feature typed as the var is."""
    from ..edit import EditError
    from ..edit.outputs import exposable
    from ..ir import Var
    title = f"Expose {written} as an output"
    try:
        d = exposable(fn_name, fn, decl.name)
    except EditError as e:
        return Refactor(title, [], disabled=str(e))
    if d.var is not decl.var:   # a block's var shadowing the top block's: --expose names the latter
        return Refactor(title, [], disabled=f"{written} here is a block's var; --expose {decl.name} "
                                            f"exposes the top block's, on line {d.var.loc[0]}")
    t = decl.var.type or analysis.inferred(decl.var)
    if t is None:
        return Refactor(title, [], disabled=f"{written} has no type to describe it by: inference cannot work it out")
    close = _outputs_end(analysis, fn)
    if close is None:
        return Refactor(title, [], disabled="the function's outputs are not written where they can be found")
    before = analysis.source.line(close[0])[:close[1]].rstrip()
    edits = [((close, close), ("" if before.endswith("(") else ", ") + written)]
    try:
        return Refactor(title, edits + _section_output(analysis, fn_name, Var(decl.name, t)))
    except EditError as e:   # a type no feature can have
        return Refactor(title, [], disabled=str(e))


def _outputs_end(analysis, fn) -> tuple | None:
    """The place of the parenthesis closing the top block's outputs: `} -> (%a, %b)`."""
    block = fn.block
    if block.loc is None:
        return None
    _, line, column = analysis.reading.layout.span_from(block.loc[0] - 1)
    text = _without_strings(analysis.source.line(line))
    arrow = text.find("->", column)
    opening = text.find("(", arrow) if arrow >= 0 else -1
    return None if opening < 0 else _closing(analysis, (line, opening + 1), len(analysis.reading.lines))


def _section_output(analysis, fn_name: str, var) -> list:
    """An output feature for `var` added to each description of the function (features.add_output,
    on a copy of the model section's spec, written as the section printer writes it)."""
    from ..edit import features
    from ..model.section import INDENT, feature_text
    spec = analysis.model.spec if analysis.model is not None else None
    if spec is None:
        return []
    copy = type(spec)()
    copy.CopyFrom(spec)
    descs = features.descriptions(copy, analysis.program, fn_name)
    features.add_output(descs, var)
    edits = []
    for desc in descs:
        call, items = _described(analysis, desc)
        if call is None:
            continue
        kept = [f for f in items if f.kind == "output"] or items
        first = kept[-1].loc[0] - 1 if kept else _head_line(call)
        after = _item_end(analysis, first)
        first = analysis.source.line(first)
        indent = first[:len(first) - len(first.lstrip())] + ("" if kept else INDENT)
        place = (after, len(analysis.source.line(after)))
        edits.append(((place, place), "\n" + indent + feature_text("output", desc.output[-1], indent)))
    return edits


def _section_renames(analysis, fn_name: str, old: str, new: str) -> list:
    """The edits of features.rename in the text: each feature of the function's descriptions
    named `old`, and each classifier name (predictedFeatureName, ...) that is `old`."""
    from ..edit import features
    from ..ir import Value
    from ..text.lexemes import var
    from ..text.mil.printer import value_text
    from .document_text import VAR
    spec = analysis.model.spec if analysis.model is not None else None
    if spec is None:
        return []
    edits = []
    for desc in features.descriptions(spec, analysis.program, fn_name):
        call, items = _described(analysis, desc)
        for f in items:
            if f.name != old:
                continue
            line = analysis.source.line(f.loc[0] - 1)
            m = re.compile(rf"\s*{f.kind}\s+").match(line, f.loc[1] - 1)
            name = VAR.match(line, m.end()) if m else None
            if name is not None:
                edits.append((((f.loc[0] - 1, name.start()), (f.loc[0] - 1, name.end())), var(new)))
        for key in features.PREDICTED:
            at = call.arg_locs.get(key) if call is not None and getattr(desc, key) == old else None
            line = analysis.source.line(at[0] - 1) if at else ""
            m = re.compile(rf"{key}\s*=\s*({_STRING.pattern})").match(line, at[1] - 1) if at else None
            if m is not None:
                edits.append((((at[0] - 1, m.start(1)), (at[0] - 1, m.end(1))), value_text(Value.tensor(new))))
    return edits


def _described(analysis, desc) -> tuple:
    """(the head call, the features) the model section writes for `desc`: the top level's for the
    model's description, a function(...)'s for a function's; (None, []) when it writes none."""
    from ..model.section import function_name
    from ..text.section_syntax import Feature
    section = analysis.reading.section
    if section is not None and section.body is not None and desc.DESCRIPTOR.name == "FunctionDescription":
        section = next((i for i in section.body if not isinstance(i, Feature) and i.call.name == "function"
                        and function_name(i) == desc.name), None)
    if section is None or section.body is None:
        return None, []
    return section.call, [i for i in section.body if isinstance(i, Feature)]


def _head_line(call) -> int:
    """The line (0-based) a section's head starts on."""
    places = [loc for loc in (call.loc, *call.arg_locs.values()) if loc]
    return min(places)[0] - 1 if places else 0


def _item_end(analysis, line: int) -> int:
    """The last line of the section item (a feature, a head) starting on `line`: where its
    brackets close."""
    depth, lines = 0, len(analysis.reading.lines)
    for n in range(line, lines):
        text = _without_strings(analysis.source.line(n)).split("#", 1)[0]
        depth += text.count("(") + text.count("[") - text.count(")") - text.count("]")
        if depth <= 0:
            return n
    return line


def _function_at(analysis, line: int) -> tuple:
    """(name, Function) of the function written around `line`, or (None, None)."""
    span = analysis.index.function_of(line)
    if span is not None and analysis.program is not None:
        for name, fn in analysis.program.functions.items():
            if fn.loc is not None and fn.loc[0] - 1 == span[0]:
                return name, fn
    return None, None


def _of_top_block(fn, v) -> bool:
    """Whether `v` is an input of `fn` or an output of an op of its top block (what a feature names)."""
    return any(x is v for x in fn.inputs) or any(x is v for op in fn.block.operations for x in op.outputs)


def _written(analysis, name: str) -> str:
    from .index import _written
    return _written(name, analysis.index.syntax)


def refactor_actions(ls, analysis, params) -> list:
    """The refactors at the start of a codeAction request's range, as LSP CodeActions: none
    when the client asked only for other kinds; a disabled one only for a client that shows why."""
    from lsprotocol import types as lsp
    kind = lsp.CodeActionKind.RefactorRewrite
    only = params.context.only
    if only and not any(kind == k or kind.startswith(k + ".") for k in only):
        return []
    asked = getattr(getattr(ls.client_capabilities, "text_document", None), "code_action", None)
    shows_why = bool(asked and asked.disabled_support)
    uri = params.text_document.uri
    out = []
    for r in refactors(analysis, ls.position_in(analysis, params.range.start)):
        if r.disabled is not None:
            if shows_why:
                out.append(lsp.CodeAction(title=r.title, kind=kind, disabled=lsp.CodeActionDisabled(reason=r.disabled)))
        elif r.rename_at is not None:   # the client asks the new name, then asks for the rename
            at = ls.range_of(analysis, (r.rename_at, r.rename_at)).start
            out.append(lsp.CodeAction(title=r.title, kind=kind, command=lsp.Command(
                title=r.title, command="editor.action.rename", arguments=[uri, at])))
        else:
            out.append(lsp.CodeAction(title=r.title, kind=kind, edit=lsp.WorkspaceEdit(changes={uri: [
                lsp.TextEdit(range=ls.range_of(analysis, span), new_text=text) for span, text in r.edits]})))
    return out
