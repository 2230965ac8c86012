"""The language server's input, read with bounds: what stands between the editor's pipe and
pygls' message loop.

The LSP base protocol frames each message as headers (`Content-Length: N`, a blank line) and N
bytes of JSON. pygls trusts the frame: a `Content-Length` of a terabyte is read whole (the
server dies), and a message without one makes it read the next message's headers as part of
the broken one (the server stops answering). This reader checks each frame first and hands
pygls only well-formed ones, re-framed:
- a header line longer than MAX_HEADER is cut off and the frame dropped;
- a body over MAX_MESSAGE is never read whole: reading resumes at the next `Content-Length:`
  header, and pygls is handed a `$/miltext/refused` notification instead, which the server
  turns into a message to the user;
- headers without a usable Content-Length are dropped, and reading resumes at the next
  `Content-Length:` header.
"""
from __future__ import annotations

import json
import re
import sys

MAX_MESSAGE = 64 << 20     # bytes of one message's JSON (a 64 MB document and some)
MAX_HEADER = 4096          # bytes of one header line
MAX_HEADERS = 32           # header lines of one message
REFUSED = "$/miltext/refused"

_LENGTH = re.compile(rb"Content-Length:[ \t]*([0-9]{1,20})[ \t]*\r?\n?", re.I)


class BoundedReader:
    """A binary stream for pygls (`readline`, `read`) that yields only checked frames."""

    def __init__(self, stream=None, log=None):
        self.stream = stream if stream is not None else sys.stdin.buffer
        self.log = log if log is not None else sys.stderr
        self.pending = b""
        self.carry = b""   # the start of a header line found inside a broken message
        self.skipping = False  # whether what follows belongs to a refused message

    # -- what pygls calls ---------------------------------------------------------------------
    def readline(self) -> bytes:
        if not self.pending:
            self.pending = self._next_frame()
        cut = self.pending.find(b"\n") + 1 or len(self.pending)
        line, self.pending = self.pending[:cut], self.pending[cut:]
        return line

    def read(self, n: int) -> bytes:
        data, self.pending = self.pending[:n], self.pending[n:]
        return data

    # -- framing ------------------------------------------------------------------------------
    def _next_frame(self) -> bytes:
        """The next well-formed message, framed again; b"" at the end of the input."""
        while True:
            if self.skipping:
                self.skipping = False
                if self._resync() is None:
                    return b""
            length = self._headers()
            if length is None:
                return b""
            if length < 0:
                continue
            if length > MAX_MESSAGE:
                # Not read, not even to skip it: a length this size is as likely a broken frame
                # as a real message, so reading resumes at the next header either way (after
                # the refusal is handed on, so that it does not wait for more input).
                self.skipping = True
                self._say(f"refused a message of {length:,} bytes (the limit is {MAX_MESSAGE:,})")
                return _frame(json.dumps({"jsonrpc": "2.0", "method": REFUSED,
                                          "params": {"size": length, "limit": MAX_MESSAGE}}).encode())
            body = self.stream.read(length)
            if len(body) < length:
                return b""
            return _frame(body)

    def _headers(self) -> int | None:
        """Reads one header section: its Content-Length, -1 for a section to drop, None at the
        end of the input."""
        length = None
        for _ in range(MAX_HEADERS):
            line = self._line()
            if line is None:
                return None
            if not line.strip():
                if length is None:
                    self._say("dropped a message without Content-Length")
                    return self._resync()
                return length
            m = _LENGTH.fullmatch(line)
            if m:
                length = int(m.group(1))
        self._say("dropped a message with too many header lines")
        return self._resync()

    def _resync(self) -> int | None:
        """Skips to the next `Content-Length:` header (the body of a message without one has no
        known end) and reads the section it starts."""
        while True:
            line = self._line(keep_long=True)
            if line is None:
                return None
            at = line.find(b"Content-Length:")
            if at >= 0:
                self.carry = line[at:]
                return -1

    def _line(self, keep_long: bool = False) -> bytes | None:
        if self.carry:
            line, self.carry = self.carry, b""
            return line
        line = self.stream.readline(MAX_HEADER)
        if not line:
            return None
        if len(line) == MAX_HEADER and not line.endswith(b"\n"):
            # Over-long: keep its tail only (where a header may follow the JSON of a broken message).
            tail = line
            while tail and not tail.endswith(b"\n"):
                tail = self.stream.readline(MAX_HEADER)
                if tail:
                    line = (line + tail)[-2 * MAX_HEADER:]
            return line if keep_long else b"X-Too-Long: dropped\r\n"
        return line

    def _say(self, message: str) -> None:
        try:
            print(f"miltext lsp: {message}", file=self.log, flush=True)
        except (OSError, ValueError):
            pass


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


# ---- the client's side (the tests, the latency benchmark): a trusted peer, read plainly ----

def frame(message: dict) -> bytes:
    """A JSON-RPC message in the base protocol's frame."""
    return _frame(json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8"))


def read_message(stream) -> dict | None:
    """The next framed message the server wrote to `stream`; None when the stream ends."""
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        key, _, value = line.decode("ascii").partition(":")
        if key.strip().lower() == "content-length":
            length = int(value)
    return json.loads(stream.read(length))
