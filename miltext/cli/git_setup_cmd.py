"""Make git show Core ML models and MIL programs as MIL text in `git diff` and `git log -p`.

Sets up a diff driver `miltext` whose textconv is `miltext textconv` (with cachetextconv, so git
converts each file version once), and marks files for it in .gitattributes: *.mlmodel (so the
model.mlmodel inside a .mlpackage too), *.pb, and weight.bin (which shows as its blobs and their
digests, so a changed weight shows). With --structural, the driver's command is also `miltext
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
PATTERNS = ("*.mlmodel", "*.pb", "weight.bin", "*.npy", "*.safetensors")
COMMENT = "# miltext: Core ML models and MIL programs as MIL text in git diff (miltext git-setup)"


def add_arguments(p) -> None:
    p.add_argument("--global", dest="global_", action="store_true",
                   help="set up git for every repository of yours, not just this one")
    p.add_argument("--structural", action="store_true",
                   help="also make `miltext diff` git's external diff for models: git diff then "
                        "aligns ops by structure, renames on one line, changed weights in numbers")


def run(args) -> int:
    scope = ["--global"] if args.global_ else []
    attributes = _global_attributes() if args.global_ else os.path.join(_top_level(), ".gitattributes")
    command = f"{shlex.quote(sys.executable)} -m miltext.cli"
    # `--` before the paths git appends: a file named `-h.mlmodel` is a file, not an option
    _git("config", *scope, f"diff.{DRIVER}.textconv", f"{command} textconv --")
    _git("config", *scope, f"diff.{DRIVER}.cachetextconv", "true")
    if args.structural:
        _git("config", *scope, f"diff.{DRIVER}.command", f"{command} diff --git-external --")
    added = add_attributes(attributes)
    where = "your global git config" if args.global_ else "this repository's git config"
    kind = "structural " if args.structural else ""
    print(f"miltext: {kind}diff driver '{DRIVER}' set in {where}; "
          f"{'added ' + ', '.join(added) + ' to' if added else 'already in'} {attributes}")
    return 0


def add_attributes(path: str) -> list:
    """Add `PATTERN diff=miltext` lines that `path` lacks; the patterns added."""
    from ..files import write_atomic
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        text = ""
    present = {tuple(line.split()[:2]) for line in text.splitlines() if line.strip()}
    missing = [p for p in PATTERNS if (p, f"diff={DRIVER}") not in present]
    if missing:
        lines = ([COMMENT] if COMMENT not in text else []) + [f"{p} diff={DRIVER}" for p in missing]
        text += ("\n" if text and not text.endswith("\n") else "") + "\n".join(lines) + "\n"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        write_atomic(path, text.encode("utf-8"))
    return missing


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
