"""The `miltext` command. Each subcommand is a module of this package with two functions:
`add_arguments(parser)` and `run(args) -> int`; COMMANDS lists them in help order.

Exit status: 0 on success, 1 when the input is at fault (the message on stderr, never a
traceback), 2 for a wrong command line.
"""
from __future__ import annotations

import importlib
import os
import sys
from types import SimpleNamespace

from .. import __version__
from ..errors import InputError, ParseError, ProgramError

# (name, module, one-line help)
COMMANDS = [
    ("print", "print_cmd", "show a model or a program as canonical MIL text"),
    ("build", "build_cmd", "write .mil text as a .mlpackage, .mlmodel or serialized MIL Program"),
    ("unpack", "unpack_cmd", "write a .mlpackage as DIR/model.mil and DIR/weights/"),
    ("pack", "pack_cmd", "write DIR/model.mil and DIR/weights/ as a .mlpackage"),
    ("fmt", "fmt_cmd", "rewrite .mil files in canonical form"),
    ("edit", "edit_cmd", "rename, expose, extract, swap ops, set weights: a model edited, verified, written"),
    ("diff", "diff_cmd", "compare two models or programs by structure (or as text, --text)"),
    ("graph", "graph_cmd", "draw a program as a graph (Graphviz DOT or SVG)"),
    ("stats", "stats_cmd", "show what is in a model: ops, weights by layer, compression, bytes on disk"),
    ("git-setup", "git_setup_cmd", "make git diff and git log -p show models as MIL text"),
    ("textconv", "textconv_cmd", "MIL text of a file, for git's textconv (never fails)"),
    ("check", "check_cmd", "report what is wrong in programs that parse"),
    ("infer", "infer_cmd", "show .mil text with every output type, name and const filled in"),
    ("run", "run_cmd", "run a model on NumPy: outputs to .npz, or checked against a reference"),
    ("compare", "compare_cmd", "run two models on the same inputs: the first op where their values part"),
    ("fp16-check", "fp16_check_cmd", "find the ops of an fp32 model that go wrong when computed in fp16"),
    ("port", "port_cmd", "carry a model to Core AI: an .aimodel lowered, saved and verified (miltext[coreai])"),
    ("lsp", "lsp_cmd", "run the MIL language server on stdin/stdout (for editors)"),
]


def build_parser(command: str | None = None):
    """The parser of `command` only (no other module is loaded: git runs `miltext textconv` once
    per file, so start-up counts); without one, the command names alone, which is all
    `--version`, `--help` or a wrong command need (so they start without numpy)."""
    import argparse
    ap = argparse.ArgumentParser(prog="miltext", description="Core ML's MIL as source text.")
    ap.add_argument("--version", action="version", version=f"miltext {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module_name, help_text in COMMANDS:
        if command is None:     # `--version`, `--help` or a wrong command: no module is needed
            sub.add_parser(name, help=help_text)
            continue
        if name != command:
            continue
        module = importlib.import_module(f"{__name__}.{module_name}")
        p = sub.add_parser(name, help=help_text, description=module.__doc__.split("\n\n")[0])
        module.add_arguments(p)
        # An input at fault exits 1, or what the command's convention says (diff's is 2).
        p.set_defaults(run=module.run, error_status=getattr(module, "ERROR_STATUS", 1))
    return ap


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    names = {name for name, _, _ in COMMANDS}
    command = argv[0] if argv and argv[0] in names else None
    if argv[:2] == ["diff", "--git-external"] and "--" not in argv:
        argv.insert(2, "--")   # git's arguments, as a config older than `... --git-external --` runs it
    args = textconv_args(argv) or build_parser(command).parse_args(argv)
    try:
        return args.run(args)
    except ParseError as e:
        print(e.render_all(), file=sys.stderr)
        return args.error_status
    except (InputError, ProgramError) as e:
        print(with_error(str(e), args), file=sys.stderr)
        return args.error_status
    except OSError as e:
        where = f"{e.filename}: " if e.filename else "miltext: "
        print(f"{where}error: {e.strerror or e}", file=sys.stderr)
        return args.error_status
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug of miltext's: say so in one line, keep the traceback for debugging
        if os.environ.get("MILTEXT_DEBUG"):
            raise
        print(f"miltext: internal error: {type(e).__name__}: {e} "
              "(please report it; set MILTEXT_DEBUG=1 to see where)", file=sys.stderr)
        return args.error_status


def textconv_args(argv: list):
    """The arguments of `textconv FILE`, the way git runs it (once per file version), read
    without building a command-line parser (argparse is a tenth of its start-up); None for any
    other command line. They are what build_parser("textconv") makes of it (tests/test_textconv_startup).
    git-setup writes `textconv --`, so that a path starting with `-` is a file; a config written
    before that runs `textconv PATH`, read as a file too unless it asks for help."""
    if argv[:1] != ["textconv"] or len(argv) not in (2, 3) or len(argv) == 3 and argv[1] != "--" \
            or len(argv) == 2 and argv[1] in ("-h", "--help", "--"):
        return None
    module = importlib.import_module(f"{__name__}.textconv_cmd")   # as build_parser loads it
    return SimpleNamespace(command="textconv", file=argv[-1], run=module.run, error_status=1)


_CHUNK = 1 << 20


def with_error(message: str, args=None) -> str:
    """`message` saying it is an error, as every error line does: `FILE: error: ...` when it
    starts with a file the command was given, else `miltext: error: ...`."""
    first = message.split("\n", 1)[0]
    if first.startswith("error: ") or ": error: " in first:
        return message
    import re
    own = re.match(r"(miltext[\w -]*): ", first)     # `miltext git-setup: ...`
    if own:
        return f"{own.group(1)}: error: {message[own.end():]}"
    given = [v for value in (vars(args).values() if args is not None else ())
             for v in (value if isinstance(value, list) else [value])]   # diff's files come as a list
    named = [v for v in given if isinstance(v, str) and v]
    head = first.split(": ", 1)[0] if ": " in first else None
    for path in sorted(named, key=len, reverse=True):
        if message.startswith(path + ": "):
            return f"{path}: error: {message[len(path) + 2:]}"
        if head is not None and head.startswith(path.rstrip("/\\") + os.sep):   # a file inside the one given
            return f"{head}: error: {message[len(head) + 2:]}"
    return f"miltext: error: {message}"


def write_stdout(text: str) -> None:
    """Text to stdout; a reader that stops early (`miltext print x | head`) is no error."""
    try:
        for start in range(0, len(text), _CHUNK):  # encoded a piece at a time, not all at once
            sys.stdout.write(text[start:start + _CHUNK])
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


if __name__ == "__main__":
    sys.exit(main())
