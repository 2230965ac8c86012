"""A progress bar on stderr for work that takes more than a second, drawn only on a terminal.

    with Progress("unpack", total=size) as progress:
        progress.advance(n, "copying weights")

Nothing is drawn for the first second, nor ever when stderr is not a terminal (a pipe, a file,
git running a textconv): quick commands and scripts stay silent. A background thread redraws
the bar, so a long step with no updates still shows time passing; the line is wiped at the end.
"""
from __future__ import annotations

import sys
import threading
import time

DELAY = 1.0      # seconds of work before the bar appears
INTERVAL = 0.1   # seconds between redraws
WIDTH = 30       # characters of the bar itself


class Progress:
    def __init__(self, label: str, total: float = 1, stream=None, delay: float | None = None):
        self.label, self.total, self.done, self.note = label, total, 0.0, ""
        self.stream = stream if stream is not None else sys.stderr
        self.delay = DELAY if delay is None else delay
        self._active = _is_terminal(self.stream)
        self._stop = threading.Event()
        self._thread = None
        self._drawn = False
        self._start = time.monotonic()

    def __enter__(self):
        if self._active:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._drawn:
            self._write("\r\x1b[K")

    def advance(self, amount: float = 0, note: str | None = None) -> None:
        """Count `amount` more of the total as done; `note` says what is being done now."""
        self.done += amount
        if note is not None:
            self.note = note

    def line(self) -> str:
        share = min(self.done / max(self.total, 1), 1.0)
        filled = int(WIDTH * share)
        elapsed = time.monotonic() - self._start
        return (f"{self.label} [{'#' * filled}{'-' * (WIDTH - filled)}] "
                f"{100 * share:3.0f}% {elapsed:4.0f}s {self.note}").rstrip()

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            self._write("\r\x1b[K" + self.line())
            self._drawn = True
            if self._stop.wait(INTERVAL):
                return

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Silent:
    """Progress's interface, doing nothing: for callers that were given no progress."""

    def advance(self, amount: float = 0, note: str | None = None) -> None:
        pass
