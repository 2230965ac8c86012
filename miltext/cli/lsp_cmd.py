"""Run the MIL language server on stdin and stdout, for editors.

It reports parse errors (and check's findings) as you type, shows a var's type and the op that
defines it, or an op's signature, on hover; completes op names, input names, %names and dtypes;
finds definitions and references, highlights and renames a var; shows inferred types as inlay
hints; offers quick fixes; lists functions, blocks and ops; and formats a file through the
canonical printer. Needs the `lsp` extra (pygls): `pip install -e '.[lsp]'` in miltext's checkout.
"""
import sys


def add_arguments(p) -> None:
    pass


def run(args) -> int:
    from ..lsp.allocator import use_the_system_allocator
    use_the_system_allocator()
    try:
        from ..lsp.server import serve
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise
        print("miltext: error: miltext lsp needs pygls, miltext's `lsp` extra: "
              "run `pip install -e '.[lsp]'` in miltext's checkout (README: Setting up)", file=sys.stderr)
        return 1
    serve()
    return 0
