"""Run a model on NumPy (miltext's reference interpreter) and write or check its outputs.

MODEL is anything `print` reads: .mil text (the shorthand too), .pb, .mlmodel, .mlpackage, an
unpacked folder or an .mlmodelc. Each input is `NAME=FILE.npy` or `NAME=LITERAL` (a Python
literal such as `[[1.0, 2.0]]`), cast to the dtype the function declares; a state is given the
same way (its starting value) and written back with -o. Outputs go to -o OUT.npz, or are shown.
With --expect REF.npz the outputs are compared with the arrays of the same names: exit 1 with
the worst element's place and error when one is outside --rtol/--atol.
"""
from __future__ import annotations

import ast
import sys

from . import write_stdout


def add_arguments(p) -> None:
    p.add_argument("model", help="a .mil, .pb, .mlmodel, .mlpackage, model folder or .mlmodelc")
    p.add_argument("--function", default="main", help="the function to run (main)")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=FILE.npy|LITERAL",
                   help="an input or a state's starting value (repeat for each)")
    p.add_argument("-o", "--output", metavar="OUT.npz", help="write the outputs (and states) to this file")
    p.add_argument("--force", action="store_true",
                   help="when -o is a link, write the file it leads to (never a file miltext did not write)")
    p.add_argument("--expect", metavar="REF.npz", help="compare the outputs with these arrays")
    p.add_argument("--rtol", type=float, default=None,
                   help="relative tolerance for --expect (by the output's dtype: fp32 1e-4, fp16 1e-3, bf16 1e-2)")
    p.add_argument("--atol", type=float, default=None,
                   help="absolute tolerance for --expect (by the output's dtype: fp32 1e-5, fp16 1e-3, bf16 1e-2)")


def run(args) -> int:
    import numpy as np

    from ..errors import InputError, format_diagnostic
    from ..ir import StateType
    from ..model.io import read_model
    from ..interpreter import RunError
    from ..interpreter import run as run_program
    output = _claim_output(args)
    model = read_model(args.model)
    fn = model.program.functions.get(args.function)
    given = dict(_named(spec) for spec in args.input)
    state_names = {v.name for v in fn.inputs if isinstance(v.type, StateType)} if fn is not None else set()
    inputs = {k: v for k, v in given.items() if k not in state_names}
    states = {k: np.asarray(v) for k, v in given.items() if k in state_names}
    try:
        outputs = run_program(model.program, inputs, args.function, states, weights=model.folder)
    except RunError as e:
        if e.loc is None:
            raise InputError(f"{args.model}: {e.message}") from None
        line = _line(model.text, e.loc[0])
        print(format_diagnostic(args.model, e.loc[0], e.loc[1], e.message, line), file=sys.stderr)
        return 1
    if args.output:
        from ..files import write_atomic
        import io
        buf = io.BytesIO()
        np.savez(buf, **outputs, **{f"state_{k}": v for k, v in states.items()})
        write_atomic(output, buf.getvalue())
    elif not args.expect:
        write_stdout("".join(f"%{k}: {v.shape} {v.dtype}\n{np.array2string(v, threshold=50)}\n"
                             for k, v in outputs.items()))
    if args.expect:
        return _compare(outputs, _load_npz(args.expect), args)
    return 0


def _claim_output(args) -> str | None:
    """Where -o writes, checked before the run: never a model, an input or a reference."""
    if not args.output:
        return None
    from ..files import claim_output
    read = [args.model, args.expect] + [spec.partition("=")[2] for spec in args.input]
    return claim_output(args.output, None, args.force, read)


def _named(spec: str):
    from ..errors import InputError
    name, sep, value = spec.partition("=")
    if not sep or not name:
        raise InputError(f"--input {spec!r}: write NAME=FILE.npy or NAME=LITERAL")
    name = name.lstrip("%")
    if value.endswith(".npy"):
        import numpy as np
        from ..files import read_regular
        import io
        data = read_regular(value)     # a missing or unreadable file says so itself
        if not data.startswith(b"\x93NUMPY"):
            raise InputError(f"{value}: not a .npy file (it does not start with numpy's header)")
        try:
            return name, np.load(io.BytesIO(data), allow_pickle=False)
        except ValueError as e:
            raise InputError(f"{value}: not a .npy file ({e})") from None
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        raise InputError(f"--input {name}: {value!r} is neither a .npy file nor a literal such as [[1.0, 2.0]]") from None


def _load_npz(path: str) -> dict:
    import io
    import zipfile

    import numpy as np

    from ..errors import InputError
    from ..files import read_regular
    try:
        with np.load(io.BytesIO(read_regular(path)), allow_pickle=False) as data:
            return {k: data[k] for k in data.files}
    except (ValueError, OSError, zipfile.BadZipFile) as e:
        raise InputError(f"{path}: not an .npz file ({e})") from None


# --expect's (rtol, atol) by the output's dtype when the command line gives none: a few units in
# the last place of the dtype (fp16 has 11 bits of precision, bf16 8), so 1 ulp never fails
TOLERANCES = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}
DEFAULT_TOLERANCE = (1e-4, 1e-5)


def _tolerance(output, args) -> tuple[float, float]:
    rtol, atol = TOLERANCES.get(str(getattr(output, "dtype", "")), DEFAULT_TOLERANCE)
    return (rtol if args.rtol is None else args.rtol), (atol if args.atol is None else args.atol)


def _compare(outputs: dict, expected: dict, args) -> int:
    import numpy as np
    missing = sorted(set(expected) - set(outputs) - {k for k in expected if k.startswith("state_")})
    if missing:
        print(f"{args.expect}: error: the model has no output {', '.join(missing)} "
              f"(it has {', '.join(sorted(outputs))})", file=sys.stderr)
        return 1
    failed = 0
    for name in sorted(set(expected) & set(outputs)):
        rtol, atol = _tolerance(outputs[name], args)
        got, want = np.asarray(outputs[name], np.float64), np.asarray(expected[name], np.float64)
        if got.shape != want.shape:
            print(f"%{name}: error: shape {got.shape}, expected {want.shape}", file=sys.stderr)
            failed += 1
            continue
        err = np.abs(got - want)
        bad = ~(err <= atol + rtol * np.abs(want)) & ~(np.isnan(got) & np.isnan(want))
        if bad.any():
            where = np.unravel_index(np.argmax(np.where(bad, err, -1)), got.shape)
            print(f"%{name}: error: {int(bad.sum())} of {got.size} elements outside rtol={rtol:g} "
                  f"atol={atol:g}; worst at {tuple(int(i) for i in where)}: {got[where]:.9g}, "
                  f"expected {want[where]:.9g} (error {err[where]:.3g})", file=sys.stderr)
            failed += 1
        else:
            print(f"%{name}: ok ({got.size} elements, max abs error {err.max() if err.size else 0:.3g})")
    return 1 if failed else 0


def _line(text: str | None, number: int) -> str | None:
    if text is None:
        return None
    lines = text.split("\n")
    return lines[number - 1] if 0 < number <= len(lines) else None
