"""Make git show Core ML models and MIL programs as MIL text in `git diff` and `git log -p`.

Sets up a diff driver `miltext` whose textconv is `miltext textconv` (with cachetextconv, so git
converts each file version once), and marks files for it in .gitattributes: *.mlmodel (so the
model.mlmodel inside a .mlpackage too), *.pb, and weight.bin (which shows as its blobs, each named
by the const that holds it in the package's model, with its digest: a changed weight is one line
naming its const; model/weight_names). With --structural, the driver's command is also `miltext
diff --git-external`: `git diff` then shows models as `miltext diff` compares them, by structure
(`git diff --no-ext-diff`, and `git log -p` without --ext-diff, still show the text). Without
--global: the current repository's config and its top-level .gitattributes; with --global: your
global config and global attributes file.
"""
import os
import shlex
import subprocess
import sys

DRIVER = "miltext"
# A pattern holding a / matches from the top folder only, unless it starts with **/.
PATTERNS = ("*.mlmodel", "*.pb", "weight.bin", "*.npy", "*.safetensors", "**/*.aimodel/main.mlirb")
ATTRIBUTES_LIMIT = 16 << 20    # bytes of an attributes file read (git's own limit is 100 MB)
COMMENT = "# miltext: Core ML models and MIL programs as MIL text in git diff (miltext git-setup)"


def add_arguments(p) -> None:
    p.add_argument("--global", dest="global_", action="store_true",
                   help="set up git for every repository of yours, not just this one")
    p.add_argument("--structural", action="store_true",
                   help="also make `miltext diff` git's external diff for models: git diff then "
                        "aligns ops by structure, renames on one line, changed weights in numbers")


def run(args) -> int:
    """Everything is checked, and the new .gitattributes made, before anything changes; a git
    config that fails midway is put back as it was, and so is the config when the attributes
    file cannot be written."""
    from ..files import write_atomic
    scope = ["--global"] if args.global_ else []
    attributes = _global_attributes() if args.global_ else os.path.join(_top_level(), ".gitattributes")
    target, text, added = planned_attributes(attributes)
    command = f"{shlex.quote(sys.executable)} -m miltext.cli"
    # `--` before the paths git appends: a file named `-h.mlmodel` is a file, not an option
    settings = {f"diff.{DRIVER}.textconv": f"{command} textconv --", f"diff.{DRIVER}.cachetextconv": "true"}
    if args.structural:
        settings[f"diff.{DRIVER}.command"] = f"{command} diff --git-external --"
    before = {key: _git("config", *scope, "--get", key, check=False) or None for key in settings}
    try:
        for key, value in settings.items():
            _git("config", *scope, key, value)
        if added:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            write_atomic(target, text)
    except BaseException:
        for key, value in before.items():
            _git("config", *scope, *((key, value) if value is not None else ("--unset", key)), check=False)
        raise
    where = "your global git config" if args.global_ else "this repository's git config"
    kind = "structural " if args.structural else ""
    print(f"miltext: {kind}diff driver '{DRIVER}' set in {where}; "
          f"{'added ' + ', '.join(added) + ' to' if added else 'already in'} {attributes}")
    return 0


def planned_attributes(path: str) -> tuple:
    """(the file to write, its new bytes, the patterns added) for `PATTERN diff=miltext` lines
    that `path` lacks. Its bytes are kept as they are, whatever their encoding (git reads them
    as bytes; the lines added are ASCII, with the file's line ending); a link is written
    through to its target. Refused (InputError) when it is no regular file, or is a link to
    nothing."""
    from ..errors import InputError
    from ..files import read_regular
    target = os.path.realpath(path)
    if os.path.islink(path) and not os.path.lexists(target):
        raise InputError(f"{path}: a link to {target}, which does not exist; git-setup changes "
                         "nothing (create the file, or remove the link)")
    data = read_regular(target, "attributes file", limit=ATTRIBUTES_LIMIT) if os.path.lexists(target) else b""
    if b"\0" in data:
        raise InputError(f"{path}: holds NUL bytes, so it is no attributes file git reads as text; "
                         "git-setup changes nothing")
    present = {tuple(line.split()[:2]) for line in data.splitlines() if line.strip()}
    missing = [p for p in PATTERNS if (p.encode(), f"diff={DRIVER}".encode()) not in present]
    if missing:
        end = b"\r\n" if b"\r\n" in data else b"\n"
        lines = ([COMMENT] if COMMENT.encode() not in data else []) + [f"{p} diff={DRIVER}" for p in missing]
        data += (end if data and not data.endswith(b"\n") else b"") + end.join(
            line.encode() for line in lines) + end
    return target, data, missing


def _top_level() -> str:
    from ..errors import InputError
    top = _git("rev-parse", "--show-toplevel", check=False)
    if not top:
        raise InputError("miltext git-setup: not in a git repository (run it in one, or use --global)")
    return top


def _global_attributes() -> str:
    configured = _git("config", "--global", "--get", "core.attributesFile", check=False)
    if configured:
        return os.path.expanduser(configured)
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "git", "attributes")


def _git(*args, check: bool = True) -> str:
    from ..errors import InputError
    try:
        result = subprocess.run(["git", *args], capture_output=True, text=True)
    except FileNotFoundError:
        raise InputError("miltext git-setup: git is not installed") from None
    if check and result.returncode != 0:
        raise InputError(f"miltext git-setup: git {' '.join(args[:2])} failed: {result.stderr.strip()}")
    return result.stdout.strip()
