"""Find the ops of an fp32 model that go wrong when Core ML computes it in fp16.

MODEL (anything `run` reads) is run in fp32 and again with every float op computed in fp16 the
way coremltools' FP16ComputePrecision makes it (inputs, consts and results cast to fp16). Listed,
first cause first: the ops whose fp16 result overflows (beyond ±65504 where fp32 is finite),
turns NaN, flushes to zero a value that counts at the tensor's scale, or is off by more than
--budget of the tensor's largest magnitude; an op that only inherits a bad input is listed under
its cause. --emit-selector prints the coremltools op_selector that keeps the causes in fp32.
Exit status: 0 when nothing goes wrong, 1 when something does, 2 for bad input.
"""
from __future__ import annotations

import json
import sys

from . import write_stdout
from .check_cmd import add_confine_refs
from .run_cmd import _bytes, _line, _named, _seconds, add_threads

ERROR_STATUS = 2


def add_arguments(p) -> None:
    p.add_argument("model", help="an fp32 .mil, .pb, .mlmodel, .mlpackage, model folder or .mlmodelc")
    p.add_argument("--function", default="main", help="the function to run (main)")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=FILE.npy|LITERAL",
                   help="an input (repeat for each)")
    p.add_argument("--budget", type=_fraction, default=None, metavar="FRACTION",
                   help="the error an op's fp16 result may have, as a fraction of its largest "
                        "fp32 magnitude (0.01)")
    p.add_argument("--keep", action="append", default=[], metavar="OP,...",
                   help="ops (by name) to keep in fp32, as the op_selector would: check the fix")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help="print the findings as one JSON object")
    shown.add_argument("--emit-selector", action="store_true",
                       help="print the Python op_selector for coremltools' FP16ComputePrecision "
                            "that keeps the causes in fp32")
    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="stop each run after this long (600)")
    p.add_argument("--max-memory", type=_bytes, default=None, metavar="SIZE",
                   help="bound each run, and the fp16 values kept to compare (half the RAM, at most 16G)")
    add_threads(p)
    add_confine_refs(p)


def run(args) -> int:
    from ..errors import InputError
    from ..interpreter import RunError, Session
    from ..interpreter.constants import Constants
    from ..interpreter.limits import Limits
    from ..ir.walk import operations
    from ..model.io import located
    from ..model.weight_refs import WeightRefError
    from ..numerics import fp16
    budget = fp16.DEFAULT_BUDGET if args.budget is None else args.budget
    keep = frozenset(name.strip() for spec in args.keep for name in spec.split(",") if name.strip())
    model = _with_lines(args.model)
    limits = Limits(max_memory=args.max_memory)
    inputs = dict(_named(spec, limits) for spec in args.input)
    try:
        session32 = Session(model.program, weights=model.folder, confine_refs=args.confine_refs)
        with Constants(model.program, model.folder, limits) as constants:
            program16, moved, casts = fp16.fp16_program(
                model.program, lambda op, fn: constants.dense([op], op.outputs[0].name, fn), keep)
        unknown = keep - {fp16.op_name(op) for op in operations(model.program)}
        if unknown:
            raise InputError(f"--keep: {args.model} has no op named {', '.join(sorted(unknown))}")
        if not moved:
            raise InputError(f"{args.model}: no op computes in fp32, so there is nothing to move to fp16 "
                             "(check the fp32 conversion: compute_precision=ct.precision.FLOAT32)")
        session16 = Session(program16, weights=model.folder, confine_refs=args.confine_refs)
        causes = fp16.check(session32, session16, inputs, args.function, budget, timeout=args.timeout,
                            max_memory=args.max_memory, threads=args.threads, casts=casts)
    except (RunError, WeightRefError) as e:
        print(_at(args.model, model.text, e.loc, e.message) if e.loc else located(args.model, None, e.message),
              file=sys.stderr)
        return ERROR_STATUS
    if args.emit_selector:
        write_stdout(fp16.selector(sorted(keep | {c.op for c in causes}), args.model))
    elif args.json:
        write_stdout(json.dumps({"ops": [c.as_json() for c in causes], "budget": budget}, indent=1) + "\n")
    else:
        write_stdout(_report(causes, args.model, model.text, budget))
    return 1 if causes else 0


def _fraction(text: str) -> float:
    import argparse
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction between 0 and 1 such as 0.01")
    return value


def _with_lines(path: str):
    """The model with its ops placed on lines: its own text's, or for a file that is not text
    the canonical text's, as `miltext print` shows it."""
    from ..model.io import read_model
    from ..model.text import model_text, parse_model
    model = read_model(path)
    if model.text is not None:
        return model
    text = model_text(model)
    located = parse_model(text, path, model.folder)
    located.source = model.source
    return located


def _at(path: str, text: str | None, loc, message: str) -> str:
    from ..errors import format_diagnostic
    return format_diagnostic(path, loc[0], loc[1], message, _line(text, loc[0]))


_SAID = {"overflow": "overflows fp16 (beyond ±65504) in", "nan": "turns NaN in",
         "underflow": "flushes to zero, where fp32 is not, in", "error": "is off by more than the budget in"}


def _report(causes: list, model: str, text: str | None, budget: float) -> str:
    if not causes:
        return f"{model}: computed in fp16, every op stays within fp16's range and {budget:g} of fp32\n"
    out = []
    for c in causes:
        where = f"{model}:{c.line}: " if c.line else f"{model}: "
        error = f", error {c.max_error:.3g} of it" if c.reason in ("error", "underflow") else ""
        out.append(f"{where}%{c.var} = {c.type} ({c.op}) {_SAID[c.reason]} {c.count} of {c.size} elements; "
                   f"fp32 max |x| {c.max_abs_fp32:.4g}{error}\n")
        line = _line(text, c.line) if c.line else None
        if line is not None:
            out.append(f"    {line.strip()}\n")
        if c.consequences:
            then = ", ".join(f"%{d.var} ({d.type}{f', line {d.line}' if d.line else ''}: {d.reason})"
                             for d in c.consequences[:8])
            more = f" and {len(c.consequences) - 8} more" if len(c.consequences) > 8 else ""
            out.append(f"    and so: {then}{more}\n")
    out.append(f"{len(causes)} op(s) go wrong in fp16; to keep them in fp32: "
               f"miltext fp16-check {model} ... --emit-selector\n")
    return "".join(out)
