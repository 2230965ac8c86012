"""Rewrite MIL text files in canonical form, as black does for Python.

FILE is a .mil file, a folder (its .mil files, recursively) or - (stdin to stdout); Apple's
model.mil dialect stays in its dialect. A file is rewritten as an edit of it (files.rewrite): all
at once, a link followed (the file it leads to is formatted), its mode and hard links kept, and
a file without write permission left as it is and reported. Comments, blank lines between groups of ops, shorthand and literals written as numbers are the
author's and stay (docs/syntax.md §10). A file that does not parse is left as it is and reported
as file:line:col; so is one whose formatted text would not read back to the same program with
the same comments (checked before anything is written). Exit status: 0 when nothing would change or all was rewritten, 1 with --check when some file would
change, 2 on any error (a file that could not be read, parsed, formatted or written).
"""
import difflib
import os
import sys

from . import write_stdout

ERROR_STATUS = 2  # any error, even one of miltext's own: 1 means "would reformat" under --check


def add_arguments(p) -> None:
    p.add_argument("files", nargs="+", metavar="FILE", help=".mil files, folders of them, or -")
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file would change")
    p.add_argument("--diff", action="store_true", help="write nothing; show what would change as a unified diff")
    p.add_argument("--drop-comments", action="store_true", help="delete the comments as well")


def run(args) -> int:
    from ..progress import Progress
    with Progress("fmt") as progress:
        return _format(args, progress)


def _format(args, progress) -> int:
    from ..authored.formatter import UnsafeFormat, format_source
    from ..errors import InputError, ParseError, ProgramError
    from ..files import BOM, rewrite
    counts = {"changed": 0, "unchanged": 0, "failed": 0, "stdout": 0}
    for path in progress.each(mil_files(args.files, counts)):
        try:
            text = _read(path)
            bom = BOM if text.startswith(BOM) else ""     # a file that starts with one keeps it
            formatted = bom + format_source(text[len(bom):], path, keep_comments=not args.drop_comments)
        except ParseError as e:
            print(e.render_all(), file=sys.stderr)
            counts["failed"] += 1
            continue
        except UnsafeFormat as e:
            print(f"{path}: error: {e}; the file is as it was", file=sys.stderr)
            counts["failed"] += 1
            continue
        except (InputError, ProgramError, OSError, UnicodeDecodeError) as e:
            print(f"{path}: error: {_reason(e)}", file=sys.stderr)
            counts["failed"] += 1
            continue
        if path == "-" and not (args.check or args.diff):
            write_stdout(formatted)  # and nothing on stderr: an editor's filter may read both
            counts["stdout"] += 1
            continue
        if formatted == text:
            counts["unchanged"] += 1
            continue
        counts["changed"] += 1
        if args.diff:
            write_stdout("".join(difflib.unified_diff(text.splitlines(True), formatted.splitlines(True),
                                                      f"{path} (original)", f"{path} (formatted)")))
        if args.check or args.diff:
            print(f"would reformat {path}", file=sys.stderr)
        else:
            try:
                rewrite(path, formatted.encode("utf-8"))
            except (OSError, InputError) as e:
                reason = _reason(e)    # a write error may say "cannot write" itself (files._about)
                reason = reason if reason.startswith("cannot write") else f"cannot write: {reason}"
                print(f"{path}: error: {reason}; the file is as it was", file=sys.stderr)
                counts["changed"] -= 1
                counts["failed"] += 1
                continue
            print(f"reformatted {path}", file=sys.stderr)
    if counts["changed"] or counts["unchanged"] or counts["failed"] or not counts["stdout"]:
        print(_summary(counts, args.check or args.diff), file=sys.stderr)
    if counts["failed"]:
        return 2
    return 1 if args.check and counts["changed"] else 0


def mil_files(paths: list, counts: dict) -> list:
    found = []
    for path in paths:
        if os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                found += [os.path.join(root, f) for f in sorted(files) if f.endswith(".mil")]
        elif path == "-" or os.path.exists(path):
            found.append(path)
        else:
            print(f"{path}: error: no such file or folder", file=sys.stderr)
            counts["failed"] += 1
    return found


def _read(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    from ..files import finish_rewrite, read_regular
    finish_rewrite(path)    # a rewrite of it that a kill stopped is finished first
    return read_regular(path).decode("utf-8")


def _reason(e) -> str:
    if isinstance(e, UnicodeDecodeError):
        return f"not UTF-8 text (byte {e.start})"
    if isinstance(e, OSError):
        return e.strerror or str(e)
    return str(e)


def _summary(counts: dict, dry: bool) -> str:
    def n(count, word):
        return f"{count} file{'s' if count != 1 else ''} {word}"
    parts = [n(counts["changed"], "would be reformatted" if dry else "reformatted")] if counts["changed"] else []
    if counts["unchanged"]:
        parts.append(n(counts["unchanged"], "left unchanged"))
    if counts["failed"]:
        parts.append(n(counts["failed"], "failed"))
    return "miltext fmt: " + (", ".join(parts) or "no files")
