"""Carry a Core ML model to Core AI: each function lowered to the `coreai` MLIR dialect and
saved as an .aimodel with coreai-core (the optional extra miltext[coreai]), then verified.

MODEL is anything `print` reads. After writing, the original runs on miltext's interpreter and
the port on Core AI's runtime, on inputs made from the input types (or given with -i); the
largest absolute and relative error of each output is shown, and port exits 1 when one is past
the tolerance (the largest error within atol + rtol times the output's largest magnitude: fp32 1e-5 + 1e-4, fp16 1e-3 + 1e-2; --rtol/--atol). An op with no
lowering is an error naming it and its line; --list-ops shows the ops that port.
"""
from __future__ import annotations

import os
import sys

from . import write_stdout

OWNED = ("main.mlirb", "main.hash", "metadata.json")     # what an .aimodel folder holds


def add_arguments(p) -> None:
    p.add_argument("model", nargs="?", help="a .mil, .pb, .mlmodel, .mlpackage or model folder")
    p.add_argument("-o", "--output", metavar="OUT.aimodel", help="the Core AI model folder to write")
    p.add_argument("--list-ops", action="store_true", help="list the MIL ops that port, by family")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=FILE.npy|LITERAL",
                   help="an input for the verifying run (the others are made up)")
    p.add_argument("--shape", action="append", default=[], metavar="NAME=D,D,...",
                   help="the static shape a flexible input is ported at (default: the input given "
                        "with -i, the description's default, else 1 then 8 for each flexible dim)")
    p.add_argument("--mlir", metavar="OUT.mlir", help="also write the MLIR text that was saved")
    p.add_argument("--no-verify", action="store_true", help="write the port without running it")
    p.add_argument("--steps", type=int, default=1, help="verifying runs, states carried over (1)")
    p.add_argument("--rtol", type=float, default=None, help="relative tolerance of the check")
    p.add_argument("--atol", type=float, default=None, help="absolute tolerance of the check")


def run(args) -> int:
    from ..errors import InputError
    if args.list_ops:
        return _list_ops()
    if not args.model or not args.output:
        raise InputError("miltext port: error: give MODEL and -o OUT.aimodel (or --list-ops)")
    if not args.output.rstrip("/").endswith(".aimodel"):
        raise InputError(f"{args.output}: error: a Core AI model is a folder named *.aimodel")
    from ..coreai import runtime
    runtime.require()                     # before anything is read: say how to install it
    from ..files import claim_output
    from ..interpreter.limits import Limits
    from ..model.io import read_model
    from .run_cmd import _named
    output = claim_output(args.output.rstrip("/"), OWNED, False, [args.model])
    mlir_out = claim_output(args.mlir, None, False, [args.model]) if args.mlir else None
    given = dict(_named(spec, Limits()) for spec in args.input)
    model = read_model(args.model)
    program, chosen = _static(args, model, given)
    text = _lowered(args.model, model, program)
    _write(text, output)
    if mlir_out:
        from ..files import write_atomic
        write_atomic(mlir_out, text.encode())
    for function, shapes in chosen.items():
        said = ", ".join(f"%{n} {s}" for n, s in shapes.items())
        print(f"{function}: flexible inputs ported at {said} (--shape sets others)", file=sys.stderr)
    print(f"wrote {output}", file=sys.stderr)
    if args.no_verify:
        return 0
    return _verify(args, model, program, output, given)


def _static(args, model, given: dict):
    """The program with static input shapes (coreai.shapes), and the shapes it chose."""
    from ..coreai.errors import PortError
    from ..coreai.shapes import described_shapes, pinned
    from ..errors import InputError
    from ..model.io import display_name
    pins = {name: value.shape for name, value in given.items()}
    for spec in args.shape:
        name, sep, dims = spec.partition("=")
        try:
            pins[name.lstrip("%")] = tuple(int(d) for d in dims.split(","))
        except ValueError:
            raise InputError(f"--shape {spec!r}: write NAME=D,D,... such as ids=1,8") from None
        if not sep or any(d <= 0 for d in pins[name.lstrip("%")]):
            raise InputError(f"--shape {spec!r}: write NAME=D,D,... with dims above 0, such as ids=1,8")
    try:
        return pinned(model.program, pins, described_shapes(model.spec), model.folder)
    except PortError as e:
        raise InputError(f"{display_name(args.model)}: error: {e.message}") from None


def _lowered(path, model, program) -> str:
    from ..coreai.errors import PortError
    from ..coreai.lower import lower_program
    from ..errors import InputError
    from ..interpreter.evaluator import Evaluator
    from ..model.io import display_name
    evaluator = Evaluator(program, model.folder)
    try:
        return lower_program(program, evaluator)
    except PortError as e:
        raise InputError(_located(display_name(path), model, e)) from None
    finally:
        evaluator.close_files()


def _located(name: str, model, e) -> str:
    """`MODEL:LINE:COL: error: ...` at the op at fault: its own place in a text model, else its
    line in the canonical text `miltext print MODEL` shows."""
    from ..errors import format_diagnostic
    op = e.op
    if op is not None and op.loc:
        lines = model.text.split("\n") if model.text else []
        line = lines[op.loc[0] - 1] if 0 < op.loc[0] <= len(lines) else None
        return format_diagnostic(name, op.loc[0], op.loc[1], e.message, line)
    if op is not None and op.outputs:
        text = model.program_text()
        needle = f"%{op.outputs[0].name}:"
        for number, line in enumerate(text.split("\n"), 1):
            column = line.find(needle)
            if column >= 0:
                return (format_diagnostic(name, number, column + 1, e.message, line)
                        + f"\n(the line of `miltext print {name}`)")
    return f"{name}: error: {e.message}"


def _write(text: str, output: str) -> None:
    """Save the text through coreai-core in a folder of its own beside `output`, then put it in
    place: a failed save leaves `output` as it was."""
    import shutil
    import tempfile

    from ..coreai import runtime
    from ..errors import InputError
    parent = os.path.dirname(os.path.abspath(output))
    work = tempfile.mkdtemp(prefix=".miltext-port-", dir=parent)
    try:
        staged = os.path.join(work, "port.aimodel")
        try:
            runtime.save(text, staged)
        except ValueError as e:
            raise InputError(f"{output}: error: coreai-core refused the lowered program "
                             f"(a bug of miltext port; --mlir shows it): {_first_lines(e)}") from None
        if os.path.isdir(output):
            old = os.path.join(work, "old.aimodel")
            os.rename(output, old)
        os.rename(staged, output)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _first_lines(e, n: int = 6) -> str:
    return "\n".join(str(e).strip().split("\n")[:n])


def _verify(args, model, program, output: str, given: dict) -> int:
    from ..coreai import runtime
    from ..coreai.verify import compared, generated
    from ..errors import InputError
    from ..interpreter import RunError
    from ..interpreter.session import Session
    steps = max(1, args.steps)
    worst_ok = True
    lines = []
    with Session(program, weights=model.folder) as session:
        for name, fn in program.functions.items():
            inputs, states = generated(fn, given)
            port_states = {k: v.copy() for k, v in states.items()}
            try:
                expected = [session.run(inputs, name, states) for _ in range(steps)]
            except RunError as e:
                raise InputError(f"{args.model}: error: miltext's interpreter cannot run {name}: {e.message}") from None
            try:
                got = runtime.run(output, name, inputs, port_states, steps)
            except Exception as e:     # the runtime's own words: what Core AI on Linux lacks
                raise InputError(f"{output}: error: Core AI's runtime cannot run {name}: "
                                 f"{_first_lines(e)}") from None
            rounds = [(f" step {i + 1}" if steps > 1 else "", want, have, "")
                      for i, (want, have) in enumerate(zip(expected, got))]
            if states:           # what the steps left in the states, too
                rounds.append((" after the last step", states, port_states, " (state)"))
            for when, want, have, kind in rounds:
                for out, abs_err, rel_err, ok, note in compared(want, have, args.rtol, args.atol):
                    worst_ok &= ok
                    shown = note or f"max abs error {abs_err:.3g}, max rel error {rel_err:.3g}"
                    lines.append(f"{name}{when}: %{out}{kind}: {shown}{'' if ok else '  (past the tolerance)'}\n")
    write_stdout("".join(lines))
    if not worst_ok:
        print(f"{output}: error: the port's outputs differ from the interpreter's past the tolerance",
              file=sys.stderr)
    return 0 if worst_ok else 1


def _list_ops() -> int:
    from ..coreai.table import OPSETS, table
    families: dict = {}
    for op, family in table().items():
        families.setdefault(family, []).append(op)
    out = [f"MIL ops miltext port lowers to Core AI (opsets {', '.join(OPSETS)}):\n"]
    for family in sorted(families):
        out.append(f"{family}: {' '.join(families[family])}\n")
    write_stdout("".join(out))
    return 0
