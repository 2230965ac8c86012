"""Just enough of an LSP client to speak to `miltext lsp` over stdio as an editor does (places
in UTF-16 units, the LSP default), and the requests the LSP tests make with it."""
import queue
import subprocess
import sys
import threading
from contextlib import contextmanager

import pytest

from miltext.lsp.transport import frame, read_message

TIMEOUT = 60


class Client:
    """Just enough of an LSP client: Content-Length framing, requests matched to their
    responses, notifications kept for the test to look at."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-m", "miltext.cli", "lsp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.messages = queue.Queue()
        self.notifications = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        while (message := read_message(self.proc.stdout)) is not None:
            self.messages.put(message)

    def send(self, message: dict):
        self.proc.stdin.write(frame(message))
        self.proc.stdin.flush()

    def notify(self, method: str, params: dict):
        self.send({"method": method, "params": params})

    def request(self, method: str, params: dict):
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        while True:
            message = self._next()
            if message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, message["error"]
                return message["result"]

    def notification(self, method: str, uri: str | None = None) -> dict:
        """The first notification `method` not looked at yet (for `uri`), waiting for it."""
        while True:
            for n in self.notifications:
                if n["method"] == method and (uri is None or n["params"].get("uri") == uri):
                    self.notifications.remove(n)
                    return n["params"]
            self._next()

    def _next(self) -> dict:
        try:
            message = self.messages.get(timeout=TIMEOUT)
        except queue.Empty:
            self.proc.kill()
            pytest.fail("the server did not answer: " + self.proc.stderr.read().decode(errors="replace"))
        if "method" in message and "id" in message:  # a request from the server
            self.send({"id": message["id"], "result": None})
        elif "method" in message:
            self.notifications.append(message)
        return message


@contextmanager
def running_client():
    """An LSP client talking to `miltext lsp`, initialized; shut down (exit status 0) after."""
    try:
        import pygls  # noqa: F401
    except ImportError:
        pytest.fail("pygls is not installed: pip install -e '.[lsp]' (make test does)", pytrace=False)
    c = Client()
    result = c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {
        "textDocument": {"documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                         "hover": {"contentFormat": ["markdown", "plaintext"]}}}})
    c.capabilities = result["capabilities"]
    c.notify("initialized", {})
    yield c
    c.request("shutdown", None)
    c.notify("exit", None)
    assert c.proc.wait(timeout=TIMEOUT) == 0
    c.proc.stdout.close()
    c.proc.stdin.close()
    c.proc.stderr.close()


def open_text(client, uri: str, text: str) -> list:
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "mil", "version": 1, "text": text}})
    return client.notification("textDocument/publishDiagnostics", uri)["diagnostics"]


def at(line: int, character: int) -> dict:
    return {"line": line, "character": character}


def span(line: int, start: int, end: int) -> dict:
    return {"start": at(line, start), "end": at(line, end)}


def doc(uri):
    return {"textDocument": {"uri": uri}}


def request_at(client, method, uri, line, character, **more):
    return client.request(method, {**doc(uri), "position": at(line, character), **more})


def change(client, uri, version, text):
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [{"text": text}]})
    while True:
        published = client.notification("textDocument/publishDiagnostics", uri)
        if published.get("version") == version:
            return published["diagnostics"]


def raw_request(client, method, params) -> dict:
    """The whole response (a result or an error)."""
    client.next_id += 1
    client.send({"id": client.next_id, "method": method, "params": params})
    while True:
        message = client._next()
        if message.get("id") == client.next_id and "method" not in message:
            return message
