"""pygls' protocol with three things made right for an editor that sends what it should not:
- a request whose params do not fit its method (a position with line -1) is answered with an
  InvalidParams error (pygls drops it unanswered, and the client waits for ever);
- the open texts count their lines as LSP does (pygls cuts them with str.splitlines, which also
  ends a line at U+2028, U+0085, a form feed, ...: an edit after such a character landed in the
  wrong place);
- a text the client has not opened is never read from disk (pygls reads it, and a FIFO blocks
  the server): it is empty.
"""
from __future__ import annotations

import asyncio
import inspect
import json

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.workspace import TextDocument, Workspace

from .positions import line_starts, offset_of, split_lines

_UNREADABLE = object()   # what a message that could not be read becomes: handled as nothing


class RawJSON(str):
    """A result already written as JSON (a big one kept in pieces: the outline), sent as it is."""
    __slots__ = ()


class MilProtocol(LanguageServerProtocol):
    def _send_response(self, msg_id, result=None, error=None):
        if error is not None or not isinstance(result, RawJSON):
            return super()._send_response(msg_id, result, error)
        self._result_types.pop(msg_id, None)
        body = f'{{"id": {json.dumps(msg_id)}, "jsonrpc": "2.0", "result": {result}}}'.encode(self.CHARSET)
        if self._include_headers:
            body = (f"Content-Length: {len(body)}\r\n"
                    f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n").encode("ascii") + body
        written = self.writer.write(body)
        if inspect.isawaitable(written):
            asyncio.ensure_future(written)


    def structure_message(self, data: dict):
        try:
            return super().structure_message(data)
        except JsonRpcException as e:
            if isinstance(data, dict) and "id" in data and "method" in data:   # a request: answer it
                if isinstance(e, JsonRpcInvalidParams):
                    e = JsonRpcInvalidParams(f"{data['method']}: these params do not fit it: {_why(e)}")
                self._send_response(data["id"], error=e.to_response_error())
            return _UNREADABLE

    def handle_message(self, message) -> None:
        if message is not _UNREADABLE:
            super().handle_message(message)

    @lsp_method(lsp.INITIALIZE)
    def lsp_initialize(self, params: lsp.InitializeParams):
        result = yield from super().lsp_initialize(params)
        self._workspace = MilWorkspace.like(self._workspace)
        return result


def _why(e: Exception) -> str:
    """The validation messages under a structuring error (cattrs nests them)."""
    found, todo = [], [e.__cause__]
    while todo:
        x = todo.pop()
        if x is None:
            continue
        inner = getattr(x, "exceptions", None)
        if inner:
            todo.extend(inner)
        else:
            found.append(str(x))
    return "; ".join(found) or "malformed"


class MilWorkspace(Workspace):
    @classmethod
    def like(cls, other: Workspace) -> "MilWorkspace":
        made = cls(other.root_uri, other._sync_kind, list(other.folders.values()), other.position_encoding)
        made._text_documents.update(other.text_documents)
        return made

    def _create_text_document(self, doc_uri: str, source: str | None = None, version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return MilTextDocument(doc_uri, source="" if source is None else source, version=version,
                               language_id=language_id, sync_kind=self._sync_kind,
                               position_codec=self.position_codec)

    def is_open(self, uri: str) -> bool:
        from urllib.parse import unquote
        return unquote(uri) in self.text_documents


class MilTextDocument(TextDocument):
    @property
    def lines(self) -> list[str]:
        return split_lines(self.source)

    def _apply_incremental_change(self, change: lsp.TextDocumentContentChangePartial) -> None:
        text, units = self.source, self.position_codec.impl
        starts = line_starts(text)
        start, end = (offset_of(text, starts, p.line, p.character, units) for p in (change.range.start, change.range.end))
        self._source = text[:start] + change.text + text[max(start, end):]
