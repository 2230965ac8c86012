"""A command writes only what it owns (docs/safety.md, "What miltext writes"): an output path
that exists and is not exactly what the command writes there is refused, and even --force never
deletes a file miltext did not write. Every test here puts the user's files in the way and
asserts they survive byte for byte; the last ones kill each writing command at every step that
changes the disk, and fill the disk under it."""
import errno
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import textwrap

import pytest

from miltext import files
from miltext.errors import InputError
from miltext.model import read_model, write_model
from model_cases import assert_clean_failure, leftovers, miltext as run, snapshot

HEAD = "main[CoreML7](%x: (2, fp32)) {\n  block0() {\n"
TAIL = "  } -> (%y)\n}\n"
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")


def example(tmp_path, name="mlp") -> str:
    """An example model (model.mil and its weights/) copied into the test's folder."""
    target = tmp_path / name
    shutil.copytree(os.path.join(EXAMPLES, name), target)
    return str(target / "model.mil")


def user_files(folder, **extra) -> dict:
    """A folder of the user's, with their files at several depths."""
    mine = {"important.txt": b"do not lose me\n", "src/main.c": b"int main(void) { return 0; }\n", **extra}
    for name, data in mine.items():
        os.makedirs(os.path.dirname(os.path.join(folder, name)), exist_ok=True)
        with open(os.path.join(folder, name), "wb") as f:
            f.write(data)
    return snapshot(folder)


# ---- build and pack: a folder that is not an earlier output ------------------------------------

@pytest.mark.parametrize("command", ["build", "pack"])
@pytest.mark.parametrize("force", [[], ["--force"]])
@pytest.mark.parametrize("output", ["proj", "proj.mlpackage"])
def test_build_and_pack_never_replace_a_folder_of_the_users(command, force, output, tmp_path):
    mil = example(tmp_path)
    before = user_files(tmp_path / output, **{"Manifest.json": b'{"mine": true}'})
    source = mil if command == "build" else os.path.dirname(mil)
    result = run(command, source, "-o", output, *force, cwd=tmp_path)
    assert_clean_failure(result)
    assert f"{output}: error: holds " in result.stderr and "which miltext does not write there" in result.stderr
    assert snapshot(tmp_path / output) == before
    assert leftovers(tmp_path) == []


def test_build_into_the_current_folder_keeps_the_thesis(tmp_path):
    mil = example(tmp_path)
    here = tmp_path / "here"
    before = user_files(here, **{"thesis.tex": b"\\documentclass{article}\n", "Manifest.json": b"{}"})
    for force in ([], ["--force"]):
        result = run("build", mil, "-o", ".", *force, cwd=here)
        assert_clean_failure(result)
        assert snapshot(here) == before


@pytest.mark.parametrize("foreign,named", [
    ("Data/com.apple.CoreML/weights/notes/todo.txt", "Data/com.apple.CoreML/weights/notes/"),
    ("Data/com.apple.CoreML/weights/checkpoint.npy", "Data/com.apple.CoreML/weights/checkpoint.npy"),
    ("Data/readme.txt", "Data/readme.txt"),
    ("extra.json", "extra.json"),
])
def test_a_package_holding_one_file_more_at_any_depth_is_refused_even_with_force(foreign, named, tmp_path):
    mil = example(tmp_path)
    assert run("build", mil, "-o", "out.mlpackage", cwd=tmp_path).returncode == 0
    os.makedirs(os.path.dirname(tmp_path / "out.mlpackage" / foreign), exist_ok=True)
    (tmp_path / "out.mlpackage" / foreign).write_bytes(b"the user's")
    before = snapshot(tmp_path / "out.mlpackage")
    result = run("build", mil, "-o", "out.mlpackage", "--force", cwd=tmp_path)
    assert_clean_failure(result)
    assert f"out.mlpackage: error: holds {named}, which miltext does not write there" in result.stderr
    assert snapshot(tmp_path / "out.mlpackage") == before


def test_an_earlier_output_is_replaced_without_force(tmp_path):
    assert run("build", example(tmp_path, "cnn"), "-o", "out.mlpackage", cwd=tmp_path).returncode == 0
    mil = example(tmp_path)
    assert run("build", mil, "-o", "fresh.mlpackage", cwd=tmp_path).returncode == 0
    result = run("build", mil, "-o", "out.mlpackage", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert snapshot(tmp_path / "out.mlpackage") == snapshot(tmp_path / "fresh.mlpackage")
    assert leftovers(tmp_path) == []


def test_a_link_is_written_through_only_with_force_and_stays_a_link(tmp_path):
    mil = example(tmp_path)
    assert run("build", example(tmp_path, "cnn"), "-o", "real.mlpackage", cwd=tmp_path).returncode == 0
    os.symlink("real.mlpackage", tmp_path / "link.mlpackage")
    before = snapshot(tmp_path / "real.mlpackage")
    result = run("build", mil, "-o", "link.mlpackage", cwd=tmp_path)
    assert_clean_failure(result)
    assert "link.mlpackage: error: a link (to real.mlpackage)" in result.stderr
    assert snapshot(tmp_path / "real.mlpackage") == before
    assert run("build", mil, "-o", "link.mlpackage", "--force", cwd=tmp_path).returncode == 0
    assert os.readlink(tmp_path / "link.mlpackage") == "real.mlpackage"
    assert snapshot(tmp_path / "real.mlpackage") != before
    assert read_model(str(tmp_path / "real.mlpackage")).program.to_bytes() == \
        read_model(str(tmp_path / "link.mlpackage")).program.to_bytes()


def test_a_link_to_a_users_folder_is_refused_even_with_force(tmp_path):
    mil = example(tmp_path)
    before = user_files(tmp_path / "mine")
    os.symlink("mine", tmp_path / "out.mlpackage")
    result = run("build", mil, "-o", "out.mlpackage", "--force", cwd=tmp_path)
    assert_clean_failure(result)
    assert "holds " in result.stderr and snapshot(tmp_path / "mine") == before


@pytest.mark.parametrize("output", ["out.pb", "out.mlmodel"])
def test_a_file_output_never_replaces_a_folder(output, tmp_path):
    mil = example(tmp_path)
    with open(mil, "rb") as f:
        text = f.read()
    with open(mil, "wb") as f:   # no weights: a .pb or .mlmodel can carry the program
        f.write(text)
    before = user_files(tmp_path / output)
    result = run("build", mil, "-o", output, "--no-verify", "--force", cwd=tmp_path)
    assert_clean_failure(result)
    assert f"{output}: error: a folder, not a file" in result.stderr
    assert snapshot(tmp_path / output) == before


def test_the_library_refuses_a_folder_of_the_users_too(tmp_path):
    model = read_model(example(tmp_path))
    before = user_files(tmp_path / "out.mlpackage")
    with pytest.raises(InputError, match="holds "):
        write_model(model, str(tmp_path / "out.mlpackage"))
    assert snapshot(tmp_path / "out.mlpackage") == before


# ---- unpack --force ----------------------------------------------------------------------------

def test_unpack_force_keeps_the_users_files_deep_in_weights(tmp_path):
    mil = example(tmp_path)
    assert run("build", mil, "-o", "m.mlpackage", cwd=tmp_path).returncode == 0
    assert run("unpack", "m.mlpackage", "dir", cwd=tmp_path).returncode == 0
    before = user_files(tmp_path / "dir", **{"weights/checkpoint.npy": b"\x93NUMPY mine", "weights/notes/todo.txt": b"todo\n"})
    result = run("unpack", "--force", "m.mlpackage", "dir", cwd=tmp_path)
    assert_clean_failure(result)
    assert "dir: error: holds " in result.stderr
    assert snapshot(tmp_path / "dir") == before
    assert leftovers(tmp_path) == []


def test_unpack_force_replaces_exactly_an_earlier_unpack(tmp_path):
    assert run("build", example(tmp_path), "-o", "a.mlpackage", cwd=tmp_path).returncode == 0
    assert run("build", example(tmp_path, "cnn"), "-o", "b.mlpackage", cwd=tmp_path).returncode == 0
    assert run("unpack", "a.mlpackage", "dir", cwd=tmp_path).returncode == 0
    assert run("unpack", "b.mlpackage", "fresh", cwd=tmp_path).returncode == 0
    assert run("unpack", "--force", "b.mlpackage", "dir", cwd=tmp_path).returncode == 0
    assert snapshot(tmp_path / "dir") == snapshot(tmp_path / "fresh")


# ---- run -o ------------------------------------------------------------------------------------

def test_run_never_writes_over_its_model_its_inputs_or_its_reference(tmp_path):
    (tmp_path / "v.mil").write_text(HEAD + '    %y: (2, fp32) = relu(x=%x, name="y")\n' + TAIL)
    import numpy as np
    np.save(tmp_path / "x.npy", np.array([1.0, -1.0], np.float32))
    assert run("run", "v.mil", "-i", "x=x.npy", "-o", "ref.npz", cwd=tmp_path).returncode == 0
    before = {name: snapshot(tmp_path / name) for name in ("v.mil", "x.npy", "ref.npz")}
    for output in ("v.mil", "x.npy", "ref.npz"):
        for force in ([], ["--force"]):
            result = run("run", "v.mil", "-i", "x=x.npy", "--expect", "ref.npz", "-o", output, *force, cwd=tmp_path)
            assert_clean_failure(result)
            assert f"{output}: error: this is the input of this command" in result.stderr
    assert {name: snapshot(tmp_path / name) for name in before} == before


# ---- fmt: an edit of the user's file -----------------------------------------------------------

UNFORMATTED = HEAD + '    %y: (2, fp32) = relu(  x=%x,   name="y")\n' + TAIL


def formatted() -> str:
    from miltext.authored.formatter import format_source
    return format_source(UNFORMATTED, "m.mil")


def test_fmt_formats_the_target_of_a_link_and_keeps_the_link(tmp_path):
    (tmp_path / "real.mil").write_text(UNFORMATTED)
    os.symlink("real.mil", tmp_path / "link.mil")
    result = run("fmt", "link.mil", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert os.path.islink(tmp_path / "link.mil") and os.readlink(tmp_path / "link.mil") == "real.mil"
    assert (tmp_path / "real.mil").read_text() == formatted() != UNFORMATTED


def test_fmt_leaves_a_read_only_file_and_says_so(tmp_path):
    path = tmp_path / "m.mil"
    path.write_text(UNFORMATTED)
    os.chmod(path, 0o444)
    result = run("fmt", "m.mil", cwd=tmp_path)
    assert_clean_failure(result, 2)
    assert "m.mil: error: cannot write: read-only (it has no write permission); the file is as it was" in result.stderr
    assert path.read_text() == UNFORMATTED and stat.S_IMODE(os.stat(path).st_mode) == 0o444


def test_fmt_keeps_hard_links_and_the_mode(tmp_path):
    path = tmp_path / "m.mil"
    path.write_text(UNFORMATTED)
    os.chmod(path, 0o640)
    os.link(path, tmp_path / "other.mil")
    inode = os.stat(path).st_ino
    result = run("fmt", "m.mil", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    st = os.stat(path)
    assert (st.st_ino, st.st_nlink, stat.S_IMODE(st.st_mode)) == (inode, 2, 0o640)
    assert (tmp_path / "other.mil").read_text() == path.read_text() == formatted()
    assert sorted(os.listdir(tmp_path)) == ["m.mil", "other.mil"]


def test_a_full_disk_while_growing_a_hard_linked_file_changes_nothing(tmp_path, monkeypatch):
    path = tmp_path / "m.mil"
    path.write_bytes(b"old")
    os.link(path, tmp_path / "other.mil")

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "posix_fallocate", full)
    with pytest.raises(OSError, match="No space left"):
        files.rewrite(path, b"a longer new text")
    assert path.read_bytes() == b"old" and os.stat(path).st_nlink == 2
    assert sorted(os.listdir(tmp_path)) == ["m.mil", "other.mil"]


OLD, NEW = b"the old text, the longer one", b"the new text"


@pytest.mark.parametrize("left,then", [(OLD, NEW), (NEW, NEW), (b"the new" + OLD[7:], NEW), (NEW + OLD[12:], NEW),
                                       (b"the old text, edited since", None)])
def test_a_rewrite_stopped_half_way_is_finished_or_named(left, then, tmp_path):
    """What a kill inside the in-place write of a hard-linked file leaves (the file part new,
    part old, and the journal) is finished by the next rewrite; a file changed since is left as
    it is, and the journal named."""
    path = tmp_path / "m.mil"
    path.write_bytes(left)
    os.link(path, tmp_path / "other.mil")
    journal = tmp_path / ".miltext-was-m.mil.journal"
    journal.write_bytes(b"miltext rewrite %d\n" % len(OLD) + OLD + NEW)
    if then is None:
        with pytest.raises(InputError, match="stopped half-way and the file has changed since; .* is in .*journal"):
            files.rewrite(path, NEW)
        assert path.read_bytes() == left and journal.read_bytes().endswith(OLD + NEW)
    else:
        files.rewrite(path, NEW)
        assert path.read_bytes() == then and not journal.exists() and os.stat(path).st_nlink == 2


# ---- killed at every step, and a full disk: the old output or the new, never half ---------------

# Runs a command of miltext with a SIGKILL of itself just before its N-th call that changes the
# disk (a sync, a rename or exchange, a write in place, a removal): every point where the target
# could change is a point it is killed at, in turn. Exit -9 when killed, else the command's status.
KILLED_AT_STEP = textwrap.dedent("""
    import os, shutil, signal, sys
    from miltext import cli, files
    steps, at = [0], int(sys.argv[1])
    def killing(function):
        def call(*args, **kwargs):
            steps[0] += 1
            if steps[0] == at:
                os.kill(os.getpid(), signal.SIGKILL)
            return function(*args, **kwargs)
        return call
    for name in ("fsync", "replace", "rename", "unlink", "rmdir", "pwrite", "ftruncate", "posix_fallocate"):
        setattr(os, name, killing(getattr(os, name)))
    files.exchange = killing(files.exchange)
    shutil.rmtree = killing(shutil.rmtree)
    sys.exit(cli.main(sys.argv[2:]))
""")

SMALL = HEAD + '    %y: (2, fp32) = relu(x=%x, name="y")\n' + TAIL


def _writers(tmp_path) -> dict:
    """command -> (its arguments, the target, a setup that puts the old target there). Each
    writes a new output over an old one of its own kind (or an edit of the user's file)."""
    mlp, cnn = example(tmp_path, "mlp"), example(tmp_path, "cnn")
    (tmp_path / "small.mil").write_text(SMALL)
    (tmp_path / "other.mil").write_text(SMALL.replace("relu", "sigmoid"))

    def command(*args):
        return lambda: run(*args, cwd=tmp_path).returncode == 0 or pytest.fail(f"setup: {args}")

    def hard_linked():
        (tmp_path / "f.mil").write_text(UNFORMATTED)
        if not (tmp_path / "f-link.mil").exists():
            os.link(tmp_path / "f.mil", tmp_path / "f-link.mil")
    import numpy as np
    np.save(tmp_path / "x.npy", np.array([1.0, -1.0], np.float32))
    np.save(tmp_path / "x2.npy", np.array([3.0, -3.0], np.float32))
    return {
        "build .mlpackage": (["build", mlp, "-o", "out.mlpackage"], "out.mlpackage", command("build", cnn, "-o", "out.mlpackage")),
        "build .mlmodel": (["build", "small.mil", "-o", "out.mlmodel"], "out.mlmodel", command("build", "other.mil", "-o", "out.mlmodel")),
        "build .pb": (["build", mlp, "-o", "out.pb"], "out.pb", command("build", cnn, "-o", "out.pb")),
        "pack": (["pack", os.path.dirname(mlp), "-o", "packed.mlpackage"], "packed.mlpackage",
                 command("pack", os.path.dirname(cnn), "-o", "packed.mlpackage")),
        "unpack --force": (["unpack", "--force", "mlp.mlpackage", "dir"], "dir",
                           lambda: (command("build", mlp, "-o", "mlp.mlpackage")(), command("build", cnn, "-o", "cnn.mlpackage")(),
                                    shutil.rmtree(tmp_path / "dir", ignore_errors=True), command("unpack", "cnn.mlpackage", "dir")())),
        "fmt": (["fmt", "f.mil"], "f.mil", lambda: (tmp_path / "f.mil").write_text(UNFORMATTED)),
        "fmt (hard-linked)": (["fmt", "f.mil"], "f.mil", hard_linked),
        "run -o": (["run", "small.mil", "-i", "x=x.npy", "-o", "out.npz"], "out.npz",
                   command("run", "small.mil", "-i", "x=x2.npy", "-o", "out.npz")),
        "graph -o": (["graph", mlp, "-o", "out.dot"], "out.dot", command("graph", cnn, "-o", "out.dot")),
    }


WRITERS = ["build .mlpackage", "build .mlmodel", "build .pb", "pack", "unpack --force", "fmt", "fmt (hard-linked)",
           "run -o", "graph -o"]


def _new_content(tmp_path, writer):
    """The writer, its target's old content and the new content it writes there."""
    args, target, setup = _writers(tmp_path)[writer]
    setup()
    old = snapshot(tmp_path / target)
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    new = snapshot(tmp_path / target)
    assert new != old
    return args, target, setup, old, new


@pytest.mark.slow
@pytest.mark.parametrize("writer", WRITERS)
def test_a_kill_at_any_step_leaves_the_old_output_or_the_new(writer, tmp_path):
    args, target, setup, old, new = _new_content(tmp_path, writer)
    seen = set()
    for step in range(1, 200):
        setup()
        assert snapshot(tmp_path / target) == old
        killed = subprocess.run([sys.executable, "-c", KILLED_AT_STEP, str(step), *map(str, args)], cwd=tmp_path,
                                capture_output=True, text=True, timeout=300)
        now = snapshot(tmp_path / target)
        # a hard-linked file is written over in place: a kill there leaves it part new, part old,
        # with the journal the next rewrite finishes it from (files.rewrite)
        journal = tmp_path / f".miltext-was-{target}.journal"
        mixed = journal.exists() and files._left_by_a_kill(now, old, new)
        assert now in (old, new) or mixed, f"killed at step {step}: the target is half-written"
        if killed.returncode != -signal.SIGKILL:
            assert killed.returncode == 0, killed.stderr
            break
        seen.add("new" if now == new else "old" if now == old else "part new, finished by the next run")
        again = run(*args, cwd=tmp_path)          # the next run finishes the job and cleans up
        assert again.returncode == 0, (step, again.stderr)
        assert snapshot(tmp_path / target) == new
        assert leftovers(tmp_path) == [], step
    else:
        pytest.fail("more than 200 steps")
    assert step > 2 and "old" in seen, (step, seen)
    print(f"{writer}: killed at each of {step - 1} steps: {' or '.join(sorted(seen))} left each time")


def _full_disk(limit: int):
    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # a write past the limit fails (EFBIG), as on a full disk
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limited


@pytest.mark.slow
@pytest.mark.parametrize("writer", WRITERS)
def test_a_full_disk_is_a_clear_error_and_leaves_the_old_output(writer, tmp_path):
    args, target, setup, old, new = _new_content(tmp_path, writer)
    largest = max(len(v) for v in new.values()) if isinstance(new, dict) else len(new)
    for limit in (16, largest // 2):           # at once, or half-way through its largest file
        setup()
        result = subprocess.run([sys.executable, "-m", "miltext.cli", *map(str, args)], cwd=tmp_path, capture_output=True,
                                text=True, timeout=300, preexec_fn=_full_disk(limit),
                                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
        assert_clean_failure(result, 2 if writer.startswith("fmt") else 1)
        assert f"{target}: error: cannot write: File too large" in result.stderr, result.stderr
        assert snapshot(tmp_path / target) == old
        assert leftovers(tmp_path) == []


def test_graph_never_writes_over_a_folder_or_a_link(tmp_path):
    mil = example(tmp_path)
    before = user_files(tmp_path / "out.dot")
    result = run("graph", mil, "-o", "out.dot", cwd=tmp_path)
    assert_clean_failure(result)
    assert "out.dot: error: a folder, not a file" in result.stderr and snapshot(tmp_path / "out.dot") == before
    (tmp_path / "mine.txt").write_bytes(b"the user's")
    os.symlink("mine.txt", tmp_path / "link.dot")
    result = run("graph", mil, "-o", "link.dot", cwd=tmp_path)
    assert_clean_failure(result)
    assert "link.dot: error: a link (to mine.txt)" in result.stderr
    assert (tmp_path / "mine.txt").read_bytes() == b"the user's" and os.path.islink(tmp_path / "link.dot")
