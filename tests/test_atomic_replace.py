"""Replacing a package folder leaves the old or the new one in place at every instant, and the
temporary files of killed runs do not stay."""
import os
import subprocess
import sys
import textwrap

import pytest

from miltext import files
from miltext.errors import InputError

OWNED = ("Manifest.json",)   # what the writer of these tests writes in a folder


def make_folder(path, content: str):
    os.makedirs(path)
    with open(os.path.join(path, "Manifest.json"), "w") as f:
        f.write(content)


def content(path) -> str:
    with open(os.path.join(path, "Manifest.json")) as f:
        return f.read()


def test_exchange_swaps_two_folders_in_one_step(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    make_folder(a, "A")
    make_folder(b, "B")
    if not files.exchange(str(a), str(b)):
        pytest.fail("renameat2(RENAME_EXCHANGE) is unavailable on this Linux machine")
    assert (content(a), content(b)) == ("B", "A")


@pytest.mark.parametrize("swap", ["exchange", "two renames"])
def test_a_folder_is_replaced_and_nothing_is_left_beside_it(tmp_path, monkeypatch, swap):
    if swap == "two renames":
        monkeypatch.setattr(files, "exchange", lambda a, b: False)
    target = tmp_path / "m.mlpackage"
    make_folder(target, "old")
    with files.atomic_folder(target, OWNED) as new:
        with open(os.path.join(new, "Manifest.json"), "w") as f:
            f.write("new")
        assert content(target) == "old"  # untouched until the block ends
    assert content(target) == "new"
    assert os.listdir(tmp_path) == ["m.mlpackage"]


def test_an_error_leaves_the_old_folder(tmp_path):
    target = tmp_path / "m.mlpackage"
    make_folder(target, "old")
    with pytest.raises(RuntimeError):
        with files.atomic_folder(target, OWNED) as new:
            make_folder(os.path.join(new, "x"), "half")
            raise RuntimeError
    assert content(target) == "old"
    assert os.listdir(tmp_path) == ["m.mlpackage"]


def test_a_file_the_user_puts_in_the_folder_meanwhile_stops_the_swap(tmp_path):
    target = tmp_path / "m.mlpackage"
    make_folder(target, "old")
    with pytest.raises(InputError, match="holds notes.txt, which miltext does not write there"):
        with files.atomic_folder(target, OWNED) as new:
            make_folder(os.path.join(new, "inner"), "new")
            (target / "notes.txt").write_bytes(b"written while miltext worked")
    assert (content(target), (target / "notes.txt").read_bytes()) == ("old", b"written while miltext worked")
    assert sorted(os.listdir(tmp_path)) == ["m.mlpackage"]


KILLED_BETWEEN_RENAMES = textwrap.dedent("""
    import os, sys
    from miltext import files
    files.exchange = lambda a, b: False          # a system without RENAME_EXCHANGE
    real_rename, calls = os.rename, []
    def rename(a, b):
        calls.append(a)
        if len(calls) == 2:                      # killed between moving the old folder away
            os._exit(9)                          # and moving the new one in
        real_rename(a, b)
    os.rename = rename
    with files.atomic_folder(sys.argv[1], ("Manifest.json",)) as new:
        with open(os.path.join(new, "Manifest.json"), "w") as f:
            f.write("new")
""")


def test_a_kill_between_the_two_renames_is_recovered_by_the_next_write(tmp_path):
    target = tmp_path / "m.mlpackage"
    make_folder(target, "old")
    run = subprocess.run([sys.executable, "-c", KILLED_BETWEEN_RENAMES, str(target)])
    assert run.returncode == 9
    assert not target.exists() and content(tmp_path / ".miltext-old-m.mlpackage") == "old"
    files.recover(str(target))
    assert content(target) == "old"
    # and the next write of the path does the same by itself, then cleans up
    subprocess.run([sys.executable, "-c", KILLED_BETWEEN_RENAMES, str(target)])
    with files.atomic_folder(target, OWNED) as new:
        make_folder(os.path.join(new, "inner"), "x")
    assert sorted(os.listdir(tmp_path)) == ["m.mlpackage"]


def test_a_killed_writers_temporary_files_are_removed_by_a_later_write(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()
    (tmp_path / f".miltext-{dead}-abc.tmp").mkdir()
    (tmp_path / f".miltext-{dead}-def.tmp").write_bytes(b"x" * 100)
    (tmp_path / f".miltext-{os.getppid()}-ghi.tmp").write_bytes(b"a live writer's")
    files.write_atomic(tmp_path / "model.mil", b"text")
    assert sorted(os.listdir(tmp_path)) == [f".miltext-{os.getppid()}-ghi.tmp", "model.mil"]
