"""A progress bar on stderr for work that takes more than a second, drawn only on a terminal.

    with Progress("unpack", total=size) as progress:
        progress.advance(n, "copying weights")

Work of several stages names them with their shares of the bar; each stage then counts its
own work (`total`, `advance`), or, when it is one call that cannot report (parsing), says how
long it is expected to take, and the bar moves with the time towards the stage's end:

    with Progress("build", stages={"reading": 5, "checking": 2, "writing": 1}) as progress:
        progress.stage("reading", seconds=size / rate)
        ...
        progress.stage("writing", total=size)

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
    def __init__(self, label: str, total: float = 1, stream=None, delay: float | None = None,
                 stages: dict | None = None):
        self.label, self.total, self.done, self.note = label, total, 0.0, ""
        self.stages = dict(stages or {})          # name -> share of the bar, in order
        self._base, self._share = 0.0, 1.0         # the bar before the stage, the stage's part
        self._expected = None                      # seconds the stage is expected to take
        self._stage_start = time.monotonic()
        self.stream = stream if stream is not None else sys.stderr
        self.delay = DELAY if delay is None else delay
        self._active = _is_terminal(self.stream)
        self._stop = threading.Event()
        self._thread = None
        self._drawn = False
        self._start = time.monotonic()
        self._lock = threading.Lock()       # one writer at a time: the bar, or a message
        self._replaced = None               # sys.stderr, while messages go through _Wiping

    def __enter__(self):
        if self._active:
            if self.stream is sys.stderr:   # a message printed meanwhile wipes the bar first
                self._replaced, sys.stderr = sys.stderr, _Wiping(self)
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._replaced is not None:
            sys.stderr, self._replaced = self._replaced, None
        if self._drawn:
            self._write("\r\x1b[K")

    def each(self, items):
        """The items, one by one, each counted done when the next is asked for (or at the end)."""
        items = list(items)
        self.total, self.done = len(items) or 1, 0.0
        for item in items:
            self.note = str(item)
            yield item
            self.done += 1

    def advance(self, amount: float = 0, note: str | None = None) -> None:
        """Count `amount` more of the total as done; `note` says what is being done now."""
        self.done += amount
        if note is not None:
            self.note = note

    def stage(self, name: str, total: float = 1, seconds: float | None = None) -> None:
        """Begin stage `name` (one of `stages`; another name only changes the note): its own
        `total` of work, or the `seconds` it is expected to take when it cannot count."""
        self.note = name
        if name not in self.stages:
            return
        whole = sum(self.stages.values()) or 1
        names = list(self.stages)
        self._base = sum(self.stages[n] for n in names[:names.index(name)]) / whole
        self._share = self.stages[name] / whole
        self.total, self.done = total, 0.0
        self._expected = seconds if seconds and seconds > 0 else None
        self._stage_start = time.monotonic()

    def fraction(self) -> float:
        """How much of the whole bar is done."""
        if self._expected is not None and self.done == 0:
            # a stage that cannot count: move with time, never reaching its end before it does
            part = min(0.95 * (time.monotonic() - self._stage_start) / self._expected, 0.95)
        else:
            part = min(self.done / max(self.total, 1), 1.0)
        return min(self._base + self._share * part, 1.0)

    def line(self) -> str:
        share = self.fraction()
        filled = int(WIDTH * share)
        elapsed = time.monotonic() - self._start
        return (f"{self.label} [{'#' * filled}{'-' * (WIDTH - filled)}] "
                f"{100 * share:3.0f}% {elapsed:4.0f}s {self.note}").rstrip()

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while True:
            with self._lock:
                self._write("\r\x1b[K" + self.line())
                self._drawn = True
            if self._stop.wait(INTERVAL):
                return

    def wipe(self) -> None:
        """Clear the bar's line (with the lock held), for a message to take it."""
        if self._drawn:
            self._write("\r\x1b[K")
            self._drawn = False

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):
            pass


class _Wiping:
    """stderr while a bar is drawn on it: a message clears the bar's line before it is written;
    the next redraw puts the bar back beneath it."""

    def __init__(self, progress: Progress):
        self._progress = progress

    def write(self, text: str) -> int:
        progress = self._progress
        with progress._lock:
            progress.wipe()
            return progress.stream.write(text)

    def __getattr__(self, name):
        return getattr(self._progress.stream, name)


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Silent:
    """Progress's interface, doing nothing: for callers that were given no progress."""

    total = done = 0

    def advance(self, amount: float = 0, note: str | None = None) -> None:
        pass

    def stage(self, name: str, total: float = 1, seconds: float | None = None) -> None:
        pass
