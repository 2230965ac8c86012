"""support.goldens, which every golden-file comparison goes through: it compares, and with
UPDATE_GOLDENS=1 it rewrites what differs and nothing else."""
import os

import pytest

from support import goldens


def test_a_difference_fails_and_names_the_file(tmp_path, monkeypatch):
    monkeypatch.delenv("UPDATE_GOLDENS", raising=False)
    path = tmp_path / "case.expected"
    path.write_bytes(b"old\n")
    goldens.compare(str(path), "old\n")
    with pytest.raises(AssertionError, match="case.expected"):
        goldens.compare(str(path), "new\n")
    with pytest.raises(AssertionError, match="missing"):
        goldens.compare(str(tmp_path / "absent.expected"), "x")
    assert path.read_bytes() == b"old\n" and not (tmp_path / "absent.expected").exists()


def test_update_goldens_rewrites_what_differs_only(tmp_path, monkeypatch):
    monkeypatch.setenv("UPDATE_GOLDENS", "1")
    same, changed, binary = tmp_path / "same.txt", tmp_path / "changed.txt", tmp_path / "d.bin"
    same.write_bytes(b"kept\n")
    changed.write_bytes(b"old\r\n")
    os.utime(same, (0, 0))
    goldens.compare(str(same), "kept\n")
    goldens.compare(str(changed), "new\n")
    goldens.compare(str(binary), b"\x00\xff")
    goldens.compare(str(tmp_path / "fresh.txt"), "made\n")
    assert os.stat(same).st_mtime == 0                 # not written: it was right
    assert changed.read_bytes() == b"new\n"            # \n line ends, whatever the platform
    assert binary.read_bytes() == b"\x00\xff"
    assert (tmp_path / "fresh.txt").read_bytes() == b"made\n"
