"""The `miltext` command: print and build MIL programs.

Exit status: 0 on success, 1 when the input is at fault (the message on stderr, never a
traceback), 2 for a wrong command line.
"""
from __future__ import annotations

import argparse
import os
import sys

from . import __version__
from .errors import ParseError, ProgramError
from .sources import InputError, read_program


def cmd_print(args) -> int:
    from .text.printer import print_program
    program = read_program(args.file)
    _write_stdout(print_program(program))
    return 0


def cmd_build(args) -> int:
    from .files import write_atomic
    program = read_program(args.file)
    try:
        data = program.to_proto(strict=True).SerializeToString(deterministic=True)
    except ProgramError as e:
        raise InputError(_located(args.file, e)) from None
    write_atomic(args.output, data)
    return 0


def _located(path: str, e: ProgramError) -> str:
    if e.loc:
        return f"{path}:{e.loc[0]}:{e.loc[1]}: error: {e.message}"
    return f"{path}: error: {e.message}"


def _write_stdout(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:  # `miltext print x | head` is fine
        sys.stderr.close()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="miltext", description="Core ML's MIL as source text.")
    ap.add_argument("--version", action="version", version=f"miltext {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("print", help="show a program as canonical MIL text")
    p.add_argument("file", help=".mil text or a serialized MIL Program (.pb)")
    p.set_defaults(run=cmd_print)

    p = sub.add_parser("build", help="write a .mil program as a serialized MIL Program")
    p.add_argument("file", help="the .mil text to build")
    p.add_argument("-o", "--output", required=True, help="the .pb file to write")
    p.set_defaults(run=cmd_build)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except ParseError as e:
        print(e.render_all(), file=sys.stderr)
        return 1
    except (InputError, ProgramError) as e:
        print(str(e), file=sys.stderr)
        return 1
    except OSError as e:
        print(f"miltext: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # a bug of miltext's: say so in one line, keep the traceback for debugging
        if os.environ.get("MILTEXT_DEBUG"):
            raise
        print(f"miltext: internal error: {type(e).__name__}: {e} "
              "(please report it; set MILTEXT_DEBUG=1 to see where)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
