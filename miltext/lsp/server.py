"""The pygls side of `miltext lsp`: LSP messages in, Analysis answers out.

Each open text is analysed once for each content it has, each analysis starting from the one
before. Edits are debounced: diagnostics go out a short wait after the last edit (an edit
arriving meanwhile supersedes the one before, whose work is dropped; see Pace), from a check
that reuses the previous findings; once the typing has stopped for IDLE, the whole program is checked again.
Places go out in the units the client asked for (UTF-16 unless it negotiated otherwise);
Analysis counts code points.
"""
from __future__ import annotations

import asyncio
import gc
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer

from .. import __version__
from ..model.weight_headers import Headers
from .allocator import keep_big_blocks_apart, release_memory
from .analysis import Analysis, CannotFormat, warm_up
from .protocol import MilProtocol, RawJSON
from .transport import REFUSED, BoundedReader

# The largest document the server reads (characters): a 10k-op model with its weights in a
# file is about 2 MB; one with every weight inline can be tens of MB.
MAX_DOCUMENT = 32 << 20

DEBOUNCE = 0.04   # most seconds from an edit to its diagnostics, when no other edit follows
QUICKEST = 0.005  # least: the edits an editor sends at once (a paste, a rename) are analysed once
IDLE = 0.6        # seconds without edits before the whole program is checked again
RELEASE_AFTER = 0.2   # seconds from a big answer to handing the memory it took back

SEVERITY = {"error": lsp.DiagnosticSeverity.Error, "warning": lsp.DiagnosticSeverity.Warning,
            "note": lsp.DiagnosticSeverity.Information}
COMPLETION_KIND = {"op": lsp.CompletionItemKind.Function, "input": lsp.CompletionItemKind.Field,
                   "var": lsp.CompletionItemKind.Variable, "dtype": lsp.CompletionItemKind.TypeParameter}
KIND = {"function": lsp.SymbolKind.Function, "block": lsp.SymbolKind.Namespace,
        "op": lsp.SymbolKind.Operator}


class Pace:
    """How long each text's diagnostics wait after an edit: half what its last analysis after
    an edit took, between QUICKEST and DEBOUNCE. The wait lets the next key supersede an edit
    before any work is done on it, which is worth it when that work is long (a big text); a
    small text, analysed in less than the wait, gets its diagnostics sooner. (Half: edits
    differ in cost, a `}` put back costs more than the key before it, and the one after is
    most often cheap again.)"""

    def __init__(self):
        self.took: dict[str, float] = {}

    def wait(self, uri: str) -> float:
        return min(DEBOUNCE, max(QUICKEST, self.took.get(uri, 2 * DEBOUNCE) / 2))

    def analysed(self, uri: str, seconds: float) -> None:
        self.took[uri] = seconds

    def forget(self, uri: str) -> None:
        self.took.pop(uri, None)


class MilServer(LanguageServer):
    def __init__(self):
        super().__init__("miltext", __version__, protocol_cls=MilProtocol)
        self.analyses: dict[str, Analysis] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self.pace = Pace()
        self._release = None   # the release_memory scheduled after a big answer
        self._forget: dict[str, asyncio.TimerHandle] = {}   # each text's Outlines.forget, scheduled
        self.headers = Headers()   # the weight files' headers, parsed once for the session
        self.checker = ThreadPoolExecutor(1, "miltext-check")   # the whole checks once the typing stops

    def release_later(self) -> None:
        """release_memory once the answer being made (a big one: an outline, hints, all the
        names in scope) has been sent and dropped, and no other such request came meanwhile
        (one full collection, some 30 ms at 10k ops, once the requests pause)."""
        if self._release is not None:
            self._release.cancel()
        self._release = asyncio.get_event_loop().call_later(RELEASE_AFTER, self._released)

    def forget_outline_later(self, uri: str) -> None:
        """The ops' outline JSON dropped once the outline has not been asked for IDLE (see
        outline.Outlines.forget)."""
        found = self._forget.pop(uri, None)
        if found is not None:
            found.cancel()
        self._forget[uri] = asyncio.get_event_loop().call_later(IDLE, self._forget_outline, uri)

    def _forget_outline(self, uri: str) -> None:
        self._forget.pop(uri, None)
        a = self.analyses.get(uri)
        if a is not None:
            a.outlines.forget()
            release_memory()

    def _released(self) -> None:
        self._release = None
        release_memory()

    def analysis(self, uri: str) -> Analysis | None:
        """The analysis of an open text; None for one the client has not opened (it is not read
        from disk: it could be anything, a FIFO that never ends)."""
        if not self.workspace.is_open(uri):
            self.analyses.pop(uri, None)
            return None
        text = self.workspace.get_text_document(uri).source
        if len(text) > MAX_DOCUMENT:
            text = ""  # not read: publish says why
        found = self.analyses.get(uri)
        if found is None or found.source.text != text:
            found = self.analyses[uri] = Analysis(text, found, _path(uri), self.headers)
        return found

    def schedule(self, uri: str) -> None:
        """Diagnostics for the text as it is after its wait (Pace), unless another edit comes first."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.pending[uri] = asyncio.ensure_future(self._later(uri))

    async def _later(self, uri: str) -> None:
        try:
            await asyncio.sleep(self.pace.wait(uri))
            started = time.perf_counter()
            self.publish(uri)
            self.pace.analysed(uri, time.perf_counter() - started)
            await asyncio.sleep(IDLE)
            a = self.analyses.get(uri)
            if a is not None and not a.complete and a.program is not None:
                # in a thread, so that requests meanwhile are answered (slower, not seconds later)
                found = await asyncio.get_running_loop().run_in_executor(self.checker, self._whole_check, uri, a)
                if found is not None and self.analyses.get(uri) is a:   # the text is still the same
                    a.checked(found)
                    self.publish(uri, complete=True)
                release_memory()
        except asyncio.CancelledError:
            pass
        finally:
            if self.pending.get(uri) is asyncio.current_task():
                del self.pending[uri]

    def _whole_check(self, uri: str, a: Analysis) -> list | None:
        """check on the whole program of `a`; None when `a` is not the text's analysis any more
        (the thread's checks queue: one the typing made stale is not run)."""
        return a.whole_check() if self.analyses.get(uri) is a else None

    def position_in(self, a: Analysis, position: lsp.Position) -> tuple:
        return a.source.from_client(position.line, position.character, self.workspace.position_codec.impl)

    def range_of(self, a: Analysis, span: tuple) -> lsp.Range:
        if a.source.plain:   # a character is one unit in every encoding, the lines are the same
            (l1, c1), (l2, c2) = span
            return lsp.Range(start=lsp.Position(line=l1, character=c1), end=lsp.Position(line=l2, character=c2))
        units = self.workspace.position_codec.impl
        start, end = (lsp.Position(*a.source.to_client(p, units)) for p in span)
        return lsp.Range(start=start, end=end)

    def publish(self, uri: str, complete: bool = False) -> None:
        if not self.workspace.is_open(uri):   # closed meanwhile
            return
        document = self.workspace.get_text_document(uri)
        size, version = len(document.source), document.version
        if size > MAX_DOCUMENT:
            self.analyses.pop(uri, None)
            message = (f"miltext: this document has {size:,} characters, more than the {MAX_DOCUMENT:,} "
                       "the language server reads; use `miltext check` on it")
            at = lsp.Range(start=lsp.Position(line=0, character=0), end=lsp.Position(line=0, character=0))
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=[
                lsp.Diagnostic(range=at, message=message, severity=lsp.DiagnosticSeverity.Warning, source="miltext")]))
            return
        a = self.analysis(uri)
        diagnostics = [self.diagnostic(uri, a, f) for f in a.findings(complete)]
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics))

    def diagnostic(self, uri: str, a: Analysis, f) -> lsp.Diagnostic:
        related = [lsp.DiagnosticRelatedInformation(
            location=lsp.Location(uri=uri, range=self.range_of(a, span)), message=message)
            for span, message in f.notes]
        return lsp.Diagnostic(range=self.range_of(a, f.range), message=f.message,
                              severity=SEVERITY.get(f.severity, lsp.DiagnosticSeverity.Error),
                              source="miltext", code=f.code, related_information=related or None,
                              data={"suggestion": f.suggestion} if f.suggestion else None)

    def symbol(self, a: Analysis, s) -> lsp.DocumentSymbol:
        return lsp.DocumentSymbol(name=s.name, detail=s.detail or None, kind=KIND[s.kind],
                                  range=self.range_of(a, s.range),
                                  selection_range=self.range_of(a, s.selection),
                                  children=[self.symbol(a, c) for c in s.children] if s.children or s.kind != "op" else None)


server = MilServer()


@server.feature(lsp.INITIALIZED)
def initialized(ls: MilServer, params: lsp.InitializedParams):
    """Load what documents need now, while the editor is still starting, rather than on
    the first one opened."""
    warm_up()
    ls.checker.submit(int).result()   # its thread started now too, not with the first document
    release_memory()


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: MilServer, params: lsp.DidOpenTextDocumentParams):
    ls.publish(params.text_document.uri)
    release_memory()


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
async def did_change(ls: MilServer, params: lsp.DidChangeTextDocumentParams):
    ls.schedule(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: MilServer, params: lsp.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    ls.analyses.pop(uri, None)
    ls.pace.forget(uri)
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    release_memory()
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
def hover(ls: MilServer, params: lsp.HoverParams):
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return None
    pos = ls.position_in(a, params.position)
    found = a.hover(pos) or a.hover_op(pos)
    if found is None:
        return None
    text, span = found
    return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value=text),
                     range=ls.range_of(a, span))


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
def definition(ls: MilServer, params: lsp.DefinitionParams):
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return None
    span = a.definition(ls.position_in(a, params.position))
    if span is None:
        return None
    return lsp.Location(uri=params.text_document.uri, range=ls.range_of(a, span))


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
def references(ls: MilServer, params: lsp.ReferenceParams):
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return []
    found = a.references(ls.position_in(a, params.position), params.context.include_declaration)
    ls.release_later()
    return [lsp.Location(uri=params.text_document.uri, range=ls.range_of(a, (o.start, o.end))) for o in found]


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_HIGHLIGHT)
def highlight(ls: MilServer, params: lsp.DocumentHighlightParams):
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return []
    ls.release_later()
    return [lsp.DocumentHighlight(range=ls.range_of(a, (o.start, o.end)),
                                  kind=lsp.DocumentHighlightKind.Write if o.declares else lsp.DocumentHighlightKind.Read)
            for o in a.references(ls.position_in(a, params.position), True)]


@server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
def prepare_rename(ls: MilServer, params: lsp.PrepareRenameParams):
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return None
    found = a.lookup(ls.position_in(a, params.position))
    if found is None or found[1] is None:
        return None
    return ls.range_of(a, (found[0].start, found[0].end))


@server.feature(lsp.TEXT_DOCUMENT_RENAME)
def rename(ls: MilServer, params: lsp.RenameParams):
    from .actions import rename_edits
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return None
    try:
        edits = rename_edits(a, ls.position_in(a, params.position), params.new_name)
    except ValueError as e:
        raise JsonRpcInvalidParams(str(e)) from None
    if edits is None:
        return None
    return lsp.WorkspaceEdit(changes={params.text_document.uri: [
        lsp.TextEdit(range=ls.range_of(a, span), new_text=text) for span, text in edits]})


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(trigger_characters=["%", "(", ",", "=", "<"]))
def completion(ls: MilServer, params: lsp.CompletionParams):
    from .completion import MOST_NAMES, complete
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return None
    ls.release_later()
    pos = ls.position_in(a, params.position)
    items = []
    found = complete(a, pos)
    for item in found:
        edit = None
        if item.replace_from is not None:
            edit = lsp.TextEdit(range=ls.range_of(a, ((pos[0], item.replace_from), pos)), new_text=item.insert or item.label)
        items.append(lsp.CompletionItem(label=item.label, kind=COMPLETION_KIND[item.kind], detail=item.detail or None,
                                        insert_text=None if edit else item.insert, text_edit=edit))
    capped = sum(item.kind == "var" for item in found) >= MOST_NAMES
    return lsp.CompletionList(is_incomplete=capped, items=items)


@server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT)
def inlay_hints(ls: MilServer, params: lsp.InlayHintParams):
    from .types import hints
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return []
    ls.release_later()
    first, last = ls.position_in(a, params.range.start)[0], ls.position_in(a, params.range.end)[0]
    return [lsp.InlayHint(position=ls.range_of(a, (place, place)).start, label=label, kind=lsp.InlayHintKind.Type)
            for place, label in hints(a, first, last)]


@server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.RefactorRewrite]))
def code_actions(ls: MilServer, params: lsp.CodeActionParams):
    from .actions import fixes, refactor_actions
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return []
    asked = [_Asked(d, ls.position_in(a, d.range.start), ls.position_in(a, d.range.end))
             for d in params.context.diagnostics]
    uri = params.text_document.uri
    return [lsp.CodeAction(title=f.title, kind=lsp.CodeActionKind.QuickFix, diagnostics=[f.diagnostic.original],
                           edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=ls.range_of(a, f.range), new_text=f.text)]}))
            for f in fixes(a, asked)] + refactor_actions(ls, a, params)


class _Asked:
    """A client's diagnostic with its places in code points."""

    def __init__(self, d: lsp.Diagnostic, start: tuple, end: tuple):
        self.original, self.range, self.code, self.message = d, (start, end), d.code, d.message
        self.data = d.data


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
def document_symbol(ls: MilServer, params: lsp.DocumentSymbolParams):
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return []
    ls.release_later()
    ls.forget_outline_later(params.text_document.uri)
    if a.source.client_starts is a.source.lines.starts:   # the client's lines are the server's
        return RawJSON(a.outline_json(ls.workspace.position_codec.impl))
    return [ls.symbol(a, s) for s in a.outline]


@server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
def formatting(ls: MilServer, params: lsp.DocumentFormattingParams):
    a = ls.analysis(params.text_document.uri)
    if a is None:
        return []
    ls.release_later()
    try:
        text = a.formatted()
    except CannotFormat as e:
        ls.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Info, message=f"miltext: not formatted: {e}"))
        return []
    if text == a.source.text:
        return []
    everything = (0, 0), a.source.position(len(a.source.text))
    return [lsp.TextEdit(range=ls.range_of(a, everything), new_text=text)]


@server.feature(REFUSED)
def refused(ls: MilServer, params):
    """A message over the transport's limit was skipped unread (see transport)."""
    ls.window_show_message(lsp.ShowMessageParams(
        type=lsp.MessageType.Error,
        message=f"miltext: a message of {params.size:,} bytes was refused (the limit is {params.limit:,})"))


def _path(uri: str) -> str | None:
    """The file a file: URI names (for the weights beside it), else None."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" and parsed.path else None


def serve() -> None:
    # A 10k-op program is millions of objects that live as long as the document (bulk() moves
    # them to the oldest generation): young collections are made rarer, so that an edit's few
    # thousand new objects seldom set one off.
    gc.set_threshold(100_000, 50, 100)
    keep_big_blocks_apart()
    server.start_io(BoundedReader())
