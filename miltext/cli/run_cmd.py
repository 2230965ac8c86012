"""Run a model on NumPy (miltext's reference interpreter) and write or check its outputs.

MODEL is anything `print` reads: .mil text (the shorthand too), .pb, .mlmodel, .mlpackage, an
unpacked folder or an .mlmodelc. Each input is `NAME=FILE.npy` or `NAME=LITERAL` (a Python
literal such as `[[1.0, 2.0]]`), cast to the dtype the function declares; a state is given the
same way (its starting value) and written back with -o. Outputs go to -o OUT.npz, or are shown.
With --expect REF.npz the outputs are compared with the arrays of the same names: exit 1 with
the worst element's place and error when one is outside --rtol/--atol. --trace OUT keeps every
op's outputs (consts' aside) as the run goes, by var name (`NAME#PASS` inside loops and
branches), in OUT.npz or, for big models, a folder of .npy files; --trace-ops and --trace-vars
choose which (docs/debugging.md).
"""
from __future__ import annotations

import ast
import sys

from . import write_stdout
from .check_cmd import add_confine_refs


def add_arguments(p) -> None:
    p.add_argument("model", help="a .mil, .pb, .mlmodel, .mlpackage, model folder or .mlmodelc")
    p.add_argument("--function", default="main", help="the function to run (main)")
    p.add_argument("--input", "-i", action="append", default=[], metavar="NAME=FILE.npy|LITERAL",
                   help="an input or a state's starting value (repeat for each)")
    p.add_argument("-o", "--output", metavar="OUT.npz", help="write the outputs (and states) to this file")
    p.add_argument("--force", action="store_true",
                   help="when -o is a link, write the file it leads to (never a file miltext did not write)")
    p.add_argument("--trace", metavar="OUT.npz|FOLDER",
                   help="write every op's outputs as the run goes: an .npz, or a folder of .npy files")
    p.add_argument("--trace-ops", type=_names, default=None, metavar="TYPE,...",
                   help="with --trace: only the outputs of these op types (const included when named)")
    p.add_argument("--trace-vars", type=_names, default=None, metavar="NAME,...",
                   help="with --trace: only these vars (with --trace-ops: these as well)")
    p.add_argument("--expect", metavar="REF.npz", help="compare the outputs with these arrays")
    p.add_argument("--rtol", type=float, default=None,
                   help="relative tolerance for --expect (by the output's dtype: fp32 1e-4, fp16 1e-3, bf16 1e-2)")
    p.add_argument("--atol", type=float, default=None,
                   help="absolute tolerance for --expect (by the output's dtype: fp32 1e-5, fp16 1e-3, bf16 1e-2)")
    p.add_argument("--timeout", type=_seconds, default=None, metavar="SECONDS",
                   help="stop the run after this long (600; checked at every op and every loop pass)")
    p.add_argument("--max-memory", type=_bytes, default=None, metavar="SIZE",
                   help="refuse a tensor that would take the run past this (e.g. 4G; half the RAM, "
                        "at most 16G); also bounds the inputs and the --expect arrays")
    add_threads(p)
    add_confine_refs(p)


def run(args) -> int:
    import numpy as np

    from ..errors import InputError, format_diagnostic
    from ..interpreter import RunError, run as run_program
    from ..ir import StateType
    from ..model.io import read_model
    from ..model.weight_refs import WeightRefError
    output = _claim_output(args)
    model = read_model(args.model)
    fn = model.program.functions.get(args.function)
    from ..interpreter.limits import Limits
    limits = Limits(max_memory=args.max_memory)         # for the files read here
    given = dict(_named(spec, limits) for spec in args.input)
    expected = _load_npz(args.expect, limits) if args.expect else None
    state_names = {v.name for v in fn.inputs if isinstance(v.type, StateType)} if fn is not None else set()
    inputs = {k: v for k, v in given.items() if k not in state_names}
    states = {k: np.asarray(v) for k, v in given.items() if k in state_names}
    try:
        if args.trace:
            outputs = _traced(model, inputs, states, args)
        else:
            outputs = run_program(model.program, inputs, args.function, states, weights=model.folder,
                                  confine_refs=args.confine_refs, timeout=args.timeout,
                                  max_memory=args.max_memory, threads=args.threads)
    except (RunError, WeightRefError) as e:
        if e.loc is None:
            raise InputError(f"{args.model}: {e.message}") from None
        line = _line(model.text, e.loc[0])
        print(format_diagnostic(args.model, e.loc[0], e.loc[1], e.message, line), file=sys.stderr)
        return 1
    if args.output:
        from ..files import write_atomic
        write_atomic(output, _npz(_arrays(outputs, states, args.model)))
    elif not args.expect:
        write_stdout("".join(f"%{k}: {_shown(v)}\n" for k, v in outputs.items()))
    if expected is not None:
        return _compare(outputs, expected, args)
    return 0


def _traced(model, inputs: dict, states: dict, args) -> dict:
    """The outputs of a run whose values are written to --trace as they come."""
    from ..interpreter import Session
    from ..numerics.trace import trace, write_trace
    read = [args.model, args.expect, args.output] + [spec.partition("=")[2] for spec in args.input]
    with Session(model.program, model.folder, args.confine_refs) as session:
        return write_trace(args.trace, lambda on_value: trace(
            session, inputs, on_value, args.function, args.trace_ops, args.trace_vars, states=states,
            timeout=args.timeout, max_memory=args.max_memory, threads=args.threads), read, args.force)


def _names(text: str) -> list:
    import argparse
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names nothing: write NAME,NAME,...")
    return names


def _seconds(text: str) -> float:
    import argparse
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def add_threads(p) -> None:
    p.add_argument("--threads", type=_count, default=None, metavar="N",
                   help="run on at most N threads (as many as OPENBLAS_NUM_THREADS or the cores, "
                        "one while the machine is busy)")


def _count(text: str) -> int:
    import argparse
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of threads, 1 or more")
    return int(text)


_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def _bytes(text: str) -> int:
    """A size: bytes, or a number with K, M, G or T (powers of 1024; a trailing B or iB is allowed)."""
    import argparse
    import re
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\s*", text, re.IGNORECASE)
    value = int(float(found[1]) * _UNITS[found[2].upper()]) if found else 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size above 0 such as 512M, 4G or 1000000")
    return value


def _arrays(outputs: dict, states: dict, model: str) -> dict:
    """What -o writes: each output, and each state as state_NAME; every one an array under a
    name of its own."""
    from ..errors import InputError
    arrays = dict(outputs)
    for name, value in states.items():
        if f"state_{name}" in arrays:
            raise InputError(f"{model}: output %state_{name} and state %{name} would both be "
                             f"state_{name} in the .npz; rename one")
        arrays[f"state_{name}"] = value
    for name, value in arrays.items():
        if not _is_array(value):
            raise InputError(f"{model}: output %{name} is a {type(value).__name__}, which an .npz "
                             "cannot hold (run without -o to see it)")
    return arrays


def _is_array(value) -> bool:
    import numpy as np
    return isinstance(value, np.ndarray) and not value.dtype.hasobject


def _shown(value) -> str:
    import numpy as np
    if _is_array(value):
        return f"{value.shape} {value.dtype}\n{np.array2string(value, threshold=50)}"
    return f"{type(value).__name__}\n{value!r}"[:2000]


def _npz(arrays: dict) -> bytes:
    """An .npz of `arrays` under their own names, whatever they are (np.savez's keywords would
    take `file` and `allow_pickle` for its own)."""
    import io
    import zipfile

    import numpy as np
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, value in arrays.items():
            with z.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asarray(value), allow_pickle=False)
    return buf.getvalue()


def _claim_output(args) -> str | None:
    """Where -o writes, checked before the run: never a model, an input or a reference."""
    if not args.output:
        return None
    from ..files import claim_output
    read = [args.model, args.expect] + [spec.partition("=")[2] for spec in args.input]
    return claim_output(args.output, None, args.force, read)


def _named(spec: str, limits):
    from ..errors import InputError
    name, sep, value = spec.partition("=")
    if not sep or not name:
        raise InputError(f"--input {spec!r}: write NAME=FILE.npy or NAME=LITERAL")
    name = name.lstrip("%")
    if value.endswith(".npy"):
        import io

        from ..files import read_regular
        data = read_regular(value)     # a missing or unreadable file says so itself
        if not data.startswith(b"\x93NUMPY"):
            raise InputError(f"{value}: not a .npy file (it does not start with numpy's header)")
        try:
            array = _npy(io.BytesIO(data), len(data), value, limits)
        except InputError as e:      # `PATH: error: ...`: the path is no argument with_error sees
            raise InputError(str(e).replace(f"{value}: ", f"{value}: error: ", 1)) from None
        if array.dtype.kind not in "biuf":
            raise InputError(f"{value}: holds {array.dtype} values, not numbers")
        return name, array
    try:
        literal = ast.literal_eval(value)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise InputError(f"--input {name}: {value!r} is neither a .npy file nor a literal such as [[1.0, 2.0]]") from None
    return name, _literal_array(name, literal)


def _literal_array(name: str, literal):
    """A literal as an array of numbers, or an InputError saying why it is none."""
    import numpy as np

    from ..errors import InputError
    try:
        array = np.asarray(literal) if not isinstance(literal, (dict, set, str, bytes)) else None
    except (ValueError, TypeError, OverflowError, RecursionError):
        array = None                    # ragged lists, numbers too big for any dtype
    if array is None or array.dtype.kind not in "biuf":
        raise InputError(f"--input {name}: {literal!r:.80} is not a tensor: write numbers (or True/False) "
                         "in nested lists of equal lengths, such as [[1.0, 2.0]]")
    return array


from ..numerics.values import NPZ_PROBLEMS, read_npy as _npy  # noqa: E402  (one reader of .npy for both)


def _load_npz(path: str, limits) -> dict:
    """The arrays of an .npz reference, each member's header checked before it is read."""
    import io
    import zipfile
    import zlib

    from ..errors import InputError
    from ..files import read_regular
    arrays, held = {}, 0
    try:
        with zipfile.ZipFile(io.BytesIO(read_regular(path))) as z:
            for info in z.infolist():
                if not info.filename.endswith(".npy"):
                    raise InputError(f"{path}: not an .npz file ({info.filename!r} is no .npy array)")
                with z.open(info) as f:
                    array = _npy(f, info.file_size, f"{path}: {info.filename}", limits, held)
                if not _is_array(array) or array.dtype.kind not in "biufc":
                    raise InputError(f"{path}: {info.filename} holds {array.dtype} values, not numbers")
                arrays[info.filename[:-len(".npy")]] = array
                held += array.nbytes
    except InputError:      # already said in full (an InputError is a ValueError too)
        raise
    except (zipfile.BadZipFile, zlib.error, *NPZ_PROBLEMS) as e:
        raise InputError(f"{path}: not an .npz file ({e})") from None
    return arrays


# --expect's (rtol, atol) by the output's dtype when the command line gives none: a few units in
# the last place of the dtype (fp16 has 11 bits of precision, bf16 8), so 1 ulp never fails
TOLERANCES = {"float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}
DEFAULT_TOLERANCE = (1e-4, 1e-5)


def _tolerance(output, args) -> tuple[float, float]:
    rtol, atol = TOLERANCES.get(str(getattr(output, "dtype", "")), DEFAULT_TOLERANCE)
    return (rtol if args.rtol is None else args.rtol), (atol if args.atol is None else args.atol)


def _compare(outputs: dict, expected: dict, args) -> int:
    """Each output against the reference of its name: equal values match (infinities of the
    same sign too), a NaN matches a NaN, others must be within atol + rtol * |expected|;
    complex references are compared as complex numbers."""
    import numpy as np
    missing = sorted(set(expected) - set(outputs) - {k for k in expected if k.startswith("state_")})
    if missing:
        print(f"{args.expect}: error: the model has no output {', '.join(missing)} "
              f"(it has {', '.join(sorted(outputs))})", file=sys.stderr)
        return 1
    failed = 0
    for name in sorted(set(expected) & set(outputs)):
        if not _is_array(outputs[name]):
            print(f"%{name}: error: a {type(outputs[name]).__name__}, not an array to compare", file=sys.stderr)
            failed += 1
            continue
        rtol, atol = _tolerance(outputs[name], args)
        kind = np.complex128 if expected[name].dtype.kind == "c" else np.float64
        got, want = np.asarray(outputs[name], kind), np.asarray(expected[name], kind)
        if got.shape != want.shape:
            print(f"%{name}: error: shape {got.shape}, expected {want.shape}", file=sys.stderr)
            failed += 1
            continue
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(got - want)
            same = (got == want) | (np.isnan(got) & np.isnan(want))
            err = np.where(same, 0.0, np.where(np.isnan(err), np.inf, err))
            bad = ~same & ~(np.isfinite(err) & (err <= atol + rtol * np.abs(want)))
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
