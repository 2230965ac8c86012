"""Run two models on the same inputs and find the first op whose values part: `compare A B`
pairs their ops by structure, as `miltext diff` does (across renames, added casts, fp32 and
fp16, dense and compressed weights), and reports the first divergent op (the first, in A's
order, whose output leaves tolerance while every input it reads stayed within it), the worst
paired ops, the outputs' errors and the ops of one side only. `compare A --against VALUES.npz`
measures A's values against values captured elsewhere, keyed by A's var names (a trace
folder of `run --trace` too). Inputs (`-i NAME=FILE.npy|LITERAL`, by A's names) are cast to each
model's input dtype. Exit status: 0 when the outputs agree within tolerance, 1 when they do not,
2 when an input cannot be read or run.
"""
from __future__ import annotations

from . import write_stdout

ERROR_STATUS = 2


def add_arguments(p) -> None:
    from .run_cmd import _bytes, _seconds, add_threads
    p.add_argument("a", metavar="A", help="the model whose ops are followed")
    p.add_argument("b", metavar="B", nargs="?", help="the model it is compared with")
    p.add_argument("--against", metavar="VALUES.npz", help="compare A with these values instead of a model B")
    p.add_argument("--function", default="main", help="the function to run (main)")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=FILE.npy|LITERAL",
                   help="an input of A (repeat for each)")
    p.add_argument("--rtol", type=float, default=None,
                   help="relative tolerance (by dtype: fp32 1e-4, fp16 1e-2, bf16 5e-2; integers exact)")
    p.add_argument("--atol", type=float, default=None,
                   help="absolute tolerance (by dtype: fp32 1e-5, fp16 1e-3, bf16 1e-2; integers exact)")
    p.add_argument("--json", action="store_true", help="the report as one JSON object")
    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS", help="stop each run after this long")
    p.add_argument("--max-memory", type=_bytes, default=None, metavar="SIZE", help="as run's --max-memory")
    add_threads(p)
    from .check_cmd import add_confine_refs
    add_confine_refs(p)


def run(args) -> int:
    import sys

    from ..errors import InputError
    from ..interpreter import RunError
    from ..interpreter.limits import Limits
    from ..model.weight_refs import WeightRefError
    from ..numerics.compare import Side, compare_against, compare_models
    from ..numerics.report import as_json, as_text
    from .run_cmd import _named
    if (args.b is None) == (args.against is None):
        print("miltext compare: error: give a model B or --against VALUES.npz (one of them)", file=sys.stderr)
        return 2
    limits = Limits(max_memory=args.max_memory)
    inputs = dict(_named(spec, limits) for spec in args.input)
    options = dict(timeout=args.timeout, max_memory=args.max_memory, threads=args.threads,
                   confine_refs=args.confine_refs)
    a = Side(args.a, args.function)
    try:
        if args.against:
            from ..numerics.values import Values
            values = Values(args.against, limits)
            try:
                report = compare_against(a, values, inputs, args.rtol, args.atol, **options)
            finally:
                values.close()
        else:
            report = compare_models(a, Side(args.b, args.function), inputs, args.rtol, args.atol, **options)
    except (RunError, WeightRefError) as e:
        raise InputError(f"{_which(e, args)}: cannot run: {e.message}") from None
    write_stdout(as_json(report) if args.json else as_text(report))
    return 0 if report["agree"] else 1


def _which(error, args) -> str:
    """The model a run error came from (the one whose run it stopped)."""
    return getattr(error, "model", None) or args.a
