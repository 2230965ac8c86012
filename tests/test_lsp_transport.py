"""The language server's input is read with bounds: a huge Content-Length, a message without
one, endless header lines and an oversize document leave the server alive and answering."""
import io
import json

from miltext.lsp import transport
from miltext.lsp.transport import BoundedReader
from support.lsp import Client


def frame(obj) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def messages(data: bytes) -> list:
    """What pygls' loop gets from the reader: each framed message's JSON, in order."""
    reader, out = BoundedReader(io.BytesIO(data), io.StringIO()), []
    while True:
        length = None
        while True:
            line = reader.readline()
            if not line:
                return out
            if line.startswith(b"Content-Length: "):
                length = int(line.split(b":")[1])
            elif line == b"\r\n":
                break
        out.append(json.loads(reader.read(length)))


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
PONG = {"jsonrpc": "2.0", "id": 2, "method": "pong"}


def test_well_formed_messages_pass_unchanged():
    assert messages(frame(PING) + b"Content-Type: application/vscode-jsonrpc\r\n" + frame(PONG)[0:0] + frame(PONG)) == [PING, PONG]


def test_a_huge_content_length_is_refused_without_reading_it():
    data = b"Content-Length: 1000000000000\r\n\r\n" + b"x" * 5000 + b"\r\n" + frame(PONG)
    got = messages(data)
    assert got[0]["method"] == transport.REFUSED and got[0]["params"]["size"] == 10 ** 12
    assert got[1:] == [PONG]


def test_a_message_without_content_length_is_dropped_and_the_next_one_read():
    data = b"Content-Type: x\r\n\r\n" + json.dumps(PING).encode() + frame(PONG)
    assert messages(data) == [PONG]


def test_endless_header_lines_are_bounded():
    data = b"X-Junk: " + b"a" * 10_000_000 + b"\r\n" * 40 + frame(PONG)
    assert messages(data) == [PONG]


def test_truncated_input_ends_cleanly():
    assert messages(frame(PING)[:-3]) == []
    assert messages(b"Content-Length: 10\r\n") == []


def test_the_server_stays_up_and_answers():
    c = Client()
    try:
        c.request("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        c.proc.stdin.write(b"Content-Length: 1000000000000\r\n\r\n" + b"x" * 1000 + b"\r\n")
        c.proc.stdin.write(b"Content-Type: x\r\n\r\n{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": \"shutdown\"}")
        c.proc.stdin.flush()
        shown = c.notification("window/showMessage")
        assert "1,000,000,000,000 bytes was refused" in shown["message"]
        big = "# " + "x" * (33 << 20) + "\n"
        c.notify("textDocument/didOpen", {"textDocument": {"uri": "file:///big.mil", "languageId": "mil",
                                                           "version": 1, "text": big}})
        found = c.notification("textDocument/publishDiagnostics", "file:///big.mil")
        assert "more than the" in found["diagnostics"][0]["message"]
        assert c.request("shutdown", None) is None
        c.notify("exit", None)
        assert c.proc.wait(timeout=30) == 0
    finally:
        if c.proc.poll() is None:
            c.proc.kill()
