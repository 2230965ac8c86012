"""The progress bar: drawn on stderr when it is a terminal and the work has gone on for a
second, wiped at the end; never drawn otherwise (pipes, files, git, quick work)."""
import io
import time

import miltext.progress
from miltext.cli import main
from miltext.progress import Progress
from model_cases import LARGEST


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_terminal_sees_the_bar_once_the_work_takes_long_enough():
    stream = Terminal()
    with Progress("unpack", total=200, stream=stream, delay=0.05) as progress:
        progress.advance(100, "copying weight.bin")
        time.sleep(0.3)
    out = stream.getvalue()
    assert "\r\x1b[Kunpack [" + "#" * 15 + "-" * 15 + "]  50%" in out and out.count("copying weight.bin") >= 2
    assert out.endswith("\r\x1b[K")   # the line is wiped at the end


def test_quick_work_draws_nothing():
    stream = Terminal()
    with Progress("unpack", total=10, stream=stream) as progress:
        progress.advance(10)
    assert stream.getvalue() == ""


def test_no_terminal_no_bar():
    stream = io.StringIO()
    with Progress("unpack", total=10, stream=stream, delay=0) as progress:
        progress.advance(5)
        time.sleep(0.2)
    assert stream.getvalue() == ""


def test_unpack_draws_its_progress_on_a_terminal(tmp_path, monkeypatch):
    stream = Terminal()
    monkeypatch.setattr(miltext.progress, "DELAY", 0)     # as if the package were large
    monkeypatch.setattr("sys.stderr", stream)
    assert main(["unpack", LARGEST, str(tmp_path / "dir")]) == 0
    out = stream.getvalue()
    assert out.startswith("\r\x1b[Kunpack [") and out.endswith("\r\x1b[K")
