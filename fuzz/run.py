"""A mutation fuzzer for miltext's input doors: each target gets inputs made by mutating real
seeds (the corpus in tests/corpus and the examples), for a bounded time.

A finding is an input for which a door raises anything but a miltext error (ParseError,
ProgramError, InputError), takes over a second, or (for the language server's transport) gets
stuck. Findings are written to fuzz/findings/TARGET-N.bin, and the run exits 1.

    python fuzz/run.py                       # every target, 30 s each
    python fuzz/run.py --seconds 5 loads     # one target
    python fuzz/run.py --replay FILE TARGET  # run one saved input again, with its traceback

Pure Python and deterministic for a given --seed, so that CI can run it anywhere; the targets
are plain functions of bytes, so a coverage-guided engine (atheris) can drive them too.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import random
import signal
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

import miltext
from miltext.errors import InputError, ParseError, ProgramError

EXPECTED = (ParseError, ProgramError, InputError)
PER_INPUT = 1.0  # seconds


# ---- the targets: each takes bytes ------------------------------------------------------------

def target_loads(data: bytes) -> None:
    text = data.decode("utf-8", errors="replace")
    program = miltext.loads(text)
    miltext.dumps(program)


def target_proto_to_text(data: bytes) -> None:
    miltext.proto_to_text(data)


def target_from_proto(data: bytes) -> None:
    program = miltext.Program.from_proto(data)
    miltext.dumps(program)


RECORD = b"\x00--file--\x00"


def target_package(data: bytes) -> None:
    """`data` is a package's files as records `path NUL content` joined by RECORD (see
    package_seed); they are laid out in a temporary folder, read, printed and checked against
    their weights."""
    from miltext.model import read_model
    from miltext.model.blobs import Weights
    from miltext.model.text import model_text
    with tempfile.TemporaryDirectory() as folder:
        package = os.path.join(folder, "m.mlpackage")
        os.makedirs(package)
        for record in data.split(RECORD):
            rel, _, content = record.partition(b"\x00")
            rel = rel.decode("utf-8", errors="replace")
            if not rel or ".." in rel or rel.startswith("/") or "\x00" in rel:
                continue
            path = os.path.join(package, rel)
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as f:
                    f.write(content)
            except OSError:
                continue
        model = read_model(package)
        model_text(model)
        with Weights(model.folder, package) as weights:
            weights.check_all(model.program)


def target_lsp_transport(data: bytes) -> None:
    """The bounded reader pygls reads through: it must end (no hang) and hand on only frames
    whose bodies have the length they say."""
    from miltext.lsp.transport import BoundedReader
    reader = BoundedReader(io.BytesIO(data), io.StringIO())
    for _ in range(10_000):
        line = reader.readline()
        if not line:
            return
        if line.startswith(b"Content-Length: "):
            length = int(line.split(b":")[1])
            assert reader.readline() == b"\r\n"
            body = reader.read(length)
            assert len(body) == length
            json.loads(body) if body[:1] == b"{" and b"miltext/refused" in body else None
        else:
            raise AssertionError(f"the reader handed on a line that is no frame: {line[:60]!r}")


def target_lsp_analysis(data: bytes) -> None:
    """What the language server works out of a text, from nothing and after an edit (the text
    with one line less before it): findings, names, hover, completion, outline, hints."""
    from miltext.lsp.analysis import Analysis, CannotFormat
    from miltext.lsp.completion import complete
    from miltext.lsp.types import hints
    text = data.decode("utf-8", errors="replace")
    lines = text.split("\n")
    cut = len(lines) // 2
    before = Analysis("\n".join(lines[:cut] + lines[cut + 1:]))
    before.findings()
    for a in (Analysis(text, before),):
        a.findings()
        for n in range(0, len(lines), max(1, len(lines) // 8)):
            for column in range(0, len(lines[n]) + 1, max(1, len(lines[n]) // 4)):
                a.hover((n, column)) or a.hover_op((n, column))
                a.references((n, column))
                complete(a, (n, column))
        _ = a.outline   # a property: computing it is what is fuzzed
        hints(a, 0, len(lines))
        try:
            a.formatted()
        except CannotFormat:
            pass


# new names a rename is asked for: plain, in use, quoted, holding what ends a line elsewhere, words
RENAME_NAMES = ["y", "x", "a_1", "%z", '%"q r"', "", "%", "tensor", "fp32", "block", "a\u2028b", "a\x85b", "a\x0cb",
                "a\rb", "a\r\nb", 'a"b', "a\\b", "\U0001f600", "%\"", "a\nb", " ", "\x00"]


def target_lsp_rename(data: bytes) -> None:
    """The language server's references and rename at random places of a text (most on a name),
    to random new names: no exception escapes; each reference's range spells the name; a rename
    that is accepted gives a text that parses as the same program up to the rename (each use of
    the renamed var, as MIL's scoping resolves it, and nothing else)."""
    from miltext.lsp.analysis import Analysis
    from miltext.lsp.document_text import BARE_NAME, VAR
    from miltext.text.lexemes import var_name
    if len(data) > 40_000:
        return
    text = data.decode("utf-8", errors="replace")
    rng = random.Random(data)
    a = Analysis(text)
    names = [(n, m.start() + 1) for n, line in enumerate(a.source.lines) for m in (BARE_NAME if a.modelmil else VAR).finditer(line)]
    places = rng.sample(names, min(4, len(names))) + [(rng.randrange(len(a.source.lines) + 2), rng.randrange(80)) for _ in range(2)]
    in_use = sorted(a.index.names())
    for pos in places:
        for o in a.references(pos):
            written = a.source.line(o.start[0])[o.start[1]:o.end[1]]
            assert (written if a.modelmil else var_name(written)) == o.name, (written, o.name)
        new = rng.choice(RENAME_NAMES + in_use[:20])
        try:
            edits = a.rename(pos, new)
        except ValueError:
            continue
        if edits:
            _check_rename(text, a, pos, edits)


def _check_rename(text: str, a, pos: tuple, edits: list) -> None:
    """The renamed text parses as the program of `text` with the renamed var's uses renamed."""
    from miltext.errors import ParseError
    from miltext.ir.scopes import resolve
    from miltext.model.text import parse_model
    from miltext.text.lexemes import var_name
    try:
        before = parse_model(text).program
        miltext.dumps(before)
    except (ParseError, ValueError):
        return   # only a text that parses as a whole, and prints, has a program to compare
    out = text
    for (start, end), new_text in sorted(edits, key=lambda e: a.source.offset(e[0][0]), reverse=True):
        out = out[:a.source.offset(start)] + new_text + out[a.source.offset(end):]
    after = parse_model(out).program     # a ParseError here is a finding
    decl = a.lookup(pos)[1]
    new_name = new_text if a.modelmil else new_text[1:] if a.reading.raw else var_name(new_text)
    loc = (decl.start[0] + 1, decl.start[1] + 1)
    found = [v for fn in before.functions.values() for v in _vars(fn) if v.loc == loc and v.name == decl.name]
    assert len(found) == 1, f"the renamed var is not at {loc} in the parse of the whole text"
    for r in resolve(before).references:
        if r.target is found[0]:
            if r.op is not None:
                r.op.inputs[r.key][r.index] = new_name
            else:
                r.block.outputs[r.index] = new_name
    found[0].name = new_name
    assert miltext.dumps(before) == miltext.dumps(after), "the renamed program is not the program renamed"


def _vars(fn):
    """Every var a function declares: its inputs, its blocks' inputs and its ops' outputs."""
    yield from fn.inputs
    stack = list(fn.blocks.values())
    while stack:
        block = stack.pop()
        yield from block.inputs
        for op in block.operations:
            yield from op.outputs
            stack.extend(op.blocks)


REF = b"\x00--ref--\x00"
# what a reference may name beside the weight file itself: hostile paths and special files
REF_PATHS = ["../w.npy", "/dev/zero", "zero.npy", "fifo.npy", "sub/../w.npy", "/etc/passwd", "w.npy\x00x", ""]


def target_weight_refs(data: bytes) -> None:
    """`data` is a weight file (.npy when it starts like one, else .safetensors), then REF and
    the reference: `path NUL tensor NUL declared dtype NUL confine`. The file is laid out in a
    temporary folder beside a link to /dev/zero and a FIFO; the reference is checked (headers
    only, confined or not) and, when it fits, its tensor streamed as build writes it."""
    from miltext.ir import TensorType, WeightRef
    from miltext.model import weight_refs
    from miltext.model.weight_headers import Headers
    body, _, tail = data.partition(REF)
    fmt = "npy" if body.startswith(b"\x93NUMPY") else "safetensors"
    fields = tail.decode("utf-8", errors="replace").split("\x00") + ["", "", "", ""]
    path, tensor, declared, confine = fields[:4]
    with tempfile.TemporaryDirectory() as top:
        # the file's folder sits one level down, so that `../w.npy` names a file of this run's
        # own (absent) rather than whatever the machine keeps in its temporary folder
        folder = os.path.join(top, "model")
        os.mkdir(folder)
        with open(os.path.join(folder, f"w.{fmt}"), "wb") as f:
            f.write(body)
        os.symlink("/dev/zero", os.path.join(folder, "zero.npy"))
        os.mkfifo(os.path.join(folder, "fifo.npy"))
        ref = WeightRef(fmt, path or f"w.{fmt}", tensor if fmt == "safetensors" else None, None, (1, 1))
        headers = Headers()
        header = weight_refs.read_header(ref, folder, bool(confine), headers)
        if header.count > 1 << 20:
            return
        target = declared if declared in weight_refs.BLOB_CODES else header.dtype
        if target != header.dtype:
            ref = WeightRef(fmt, ref.path, ref.tensor, header.dtype, (1, 1))
        vtype = TensorType(target, header.shape)
        weight_refs.check(ref, vtype, folder, bool(confine), headers)
        for _ in weight_refs.encoded(ref, folder, header, target, bool(confine)):
            pass


RUN_LIMITS = {"timeout": 0.5, "max_memory": 64 << 20}     # a finding is going past them
STRINGS = ["valid", "same", "same_lower", "custom", "constant", "reflect", "replicate", "linear", "DEFAULT",
           "ALIGN_CORNERS", "UNALIGN_CORNERS", "LINEAR", "NEAREST_NEIGHBOR", "logits", "probs", "add", "update",
           "max", "EXACT", "TANH_APPROXIMATION", "fp32", "fp16", "int32", "bool", "forward", "bidirectional",
           "tanh", "sigmoid", "bilinear", "nearest", "border", "unnormalized", "CORNERS_HEIGHT_FIRST", "", "?"]
NUMBERS = [0, 1, -1, 2, 3, 7, 2 ** 31 - 1, -2 ** 31, 10 ** 9, 10 ** 12, 0.5, -2.5, 1e30, "inf", "-inf", "nan"]


def _literal(rng: random.Random, dtypes: list) -> str:
    """A random literal of one of `dtypes`: a scalar or a small tensor, now and then of hostile values."""
    dtype = rng.choice([d for d in dtypes if d != "string"] or ["fp32"]) if "string" not in dtypes or rng.random() < 0.2 \
        else "string"
    if dtype == "string":
        return '"' + rng.choice(STRINGS) + '"'
    shape = [rng.choice([0, 1, 1, 2, 3, 4]) for _ in range(rng.choice([0, 1, 1, 2, 3, 4]))]

    def element():
        if dtype == "bool":
            return rng.choice(["true", "false"])
        v = rng.choice(NUMBERS) if rng.random() < 0.3 else rng.randint(-3, 5)
        if dtype.startswith(("int", "uint")):
            return str(int(v)) if not isinstance(v, str) else str(rng.randint(-3, 5))
        return str(float(v)) if not isinstance(v, str) else v

    def nest(dims):
        return element() if not dims else "[" + ", ".join(nest(dims[1:]) for _ in range(dims[0])) + "]"
    return f"{dtype}({nest(shape)})"


def run_program_text(data: bytes) -> str:
    """One op of the interpreter's table with random inputs (its own params, some left out, some
    bound to the function's input %x), made from `data` as a seed."""
    from miltext import ops as op_table
    from miltext.interpreter.registry import supported
    rng = random.Random(data)
    op = rng.choice([t for t in supported() if t not in ("cond", "while_loop")])
    opset = rng.choice(["CoreML7", "CoreML6", "CoreML8"])
    args = []
    for name, spec in op_table.params(op, opset).items():
        if spec.get("optional") and rng.random() < 0.5:
            continue
        if spec.get("kind") == "tensor" and not spec.get("const") and rng.random() < 0.3:
            args.append(f"{name}=%x")
        else:
            args.append(f"{name}={_literal(rng, spec.get('dtypes') or ['fp32'])}")
    shape = ", ".join(str(rng.choice([1, 2, 3, 4])) for _ in range(rng.choice([1, 2, 3, 4])))
    typed = rng.random() < 0.5      # a declared type (which the kernel must not trust) or inferred
    out = f"%y: ({shape}, fp32)" if typed else "%y"
    name = ', name="y"' if typed else ""
    return (f"main[{opset}](%x: ({shape}, fp32)) {{\n  block0() {{\n    {out} = {op}({', '.join(args)}{name})\n"
            f"  }} -> (%y)\n}}\n"), shape


def target_run(data: bytes) -> None:
    """`miltext run` of a generated single-op program on a random input: a located error or an
    answer, within the time and memory it was given."""
    import numpy as np

    from miltext.interpreter import RunError, run
    text, shape = run_program_text(data)
    program = miltext.loads(text)
    rng = np.random.default_rng(list(data[:16]) or [0])
    x = rng.standard_normal([int(d) for d in shape.split(", ")]).astype(np.float32)
    try:
        run(program, {"x": x}, **RUN_LIMITS)
    except RunError as e:
        if "ran out of memory" in e.message:    # a size no check saw coming
            raise AssertionError(e.message) from None
        raise


def target_expect(data: bytes) -> None:
    """`run --expect` and `-i NAME=FILE.npy` on hostile .npz and .npy files: each array's header
    checked before it is read, every fault an InputError."""
    import contextlib
    from types import SimpleNamespace

    import numpy as np

    from miltext.cli import run_cmd
    from miltext.interpreter.limits import Limits
    limits = Limits(max_memory=RUN_LIMITS["max_memory"])
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "ref.npz")
        with open(path, "wb") as f:
            f.write(data)
        expected = run_cmd._load_npz(path, limits)
        outputs = {name: np.zeros(a.shape, np.float32) for name, a in expected.items()}
        args = SimpleNamespace(expect=path, rtol=None, atol=None)
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null), contextlib.redirect_stderr(null):
            run_cmd._compare(outputs, expected, args)
        npy = os.path.join(folder, "x.npy")
        with open(npy, "wb") as f:
            f.write(data[data.find(b"\x93NUMPY"):] if b"\x93NUMPY" in data else data)
        run_cmd._named(f"x={npy}", limits)


def expect_seeds() -> list[bytes]:
    """References as np.savez writes them: numbers of each kind, infinities, NaN, complex, empty."""
    import numpy as np
    out = []
    for arrays in ({"y": np.arange(6, dtype=np.float32).reshape(2, 3)}, {"y": np.array([np.inf, -np.inf, np.nan])},
                   {"a": np.array([1 + 2j]), "b": np.zeros((0, 3), np.int8)}, {"s": np.array(True)},
                   {"y": np.arange(4, dtype=np.float16), "state_k": np.ones((2, 2), np.int64)}):
        buf = io.BytesIO()
        np.savez(buf, **arrays)
        out.append(buf.getvalue())
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        out.append(buf.getvalue())
    return out


def run_seeds() -> list[bytes]:
    """Seeds for the generator; coremltools (what infers an op miltext has no rule for) is
    imported first, so that its start-up is not counted against the first input."""
    import importlib.util
    if importlib.util.find_spec("coremltools") is not None:
        import coremltools  # noqa: F401
    return [bytes([i]) * 8 for i in range(64)]


GENERATED_SEEDS = {"run": run_seeds, "expect": expect_seeds}


TARGETS = {"loads": target_loads, "proto_to_text": target_proto_to_text, "from_proto": target_from_proto,
           "package": target_package, "run": target_run, "expect": target_expect,
           "lsp_transport": target_lsp_transport, "lsp_analysis": target_lsp_analysis,
           "lsp_rename": target_lsp_rename,
           "weight_refs": target_weight_refs}


# ---- seeds ----------------------------------------------------------------------------------

def _files(folder: str, suffixes: tuple) -> list[str]:
    out = []
    for root, _, names in os.walk(folder):
        out += [os.path.join(root, n) for n in sorted(names) if n.endswith(suffixes)]
    return sorted(out)


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def package_seed(path: str) -> bytes:
    return RECORD.join(os.path.relpath(f, path).encode() + b"\x00" + _read(f) for f in _files(path, ("",)))


def seeds(target: str) -> list[bytes]:
    if target in GENERATED_SEEDS:
        return GENERATED_SEEDS[target]()
    corpus = os.path.join(ROOT, "tests", "corpus")
    extra = _files(os.path.join(HERE, "seeds", target), ("",))
    if target in ("loads", "lsp_analysis", "lsp_rename"):
        found = _files(corpus, (".txt", ".mil")) + _files(os.path.join(ROOT, "examples"), (".mil",))
    elif target in ("proto_to_text", "from_proto"):
        found = _files(corpus, (".pb",))
    elif target == "package":
        packages = sorted(os.path.join(r, d) for r, ds, _ in os.walk(corpus) for d in ds if d.endswith(".mlpackage"))
        small = [p for p in packages if sum(os.path.getsize(f) for f in _files(p, ("",))) < 20_000]
        return [package_seed(p) for p in small] + [_read(f) for f in extra]
    elif target == "weight_refs":
        return weight_ref_seeds() + [_read(f) for f in extra]
    else:  # lsp_transport: the framed messages of a short session
        return [_read(f) for f in extra]
    return [_read(f) for f in found + extra if os.path.getsize(f) < 200_000]


def weight_ref_seeds() -> list[bytes]:
    """Small .npy and .safetensors files of each dtype, each named by a reference plain, cast,
    confined, or by one of REF_PATHS."""
    import numpy as np
    files = []
    for dtype in ("<f2", "<f4", ">f8", "<i4", "|u1", "<u4", "|b1"):
        buf = io.BytesIO()
        np.save(buf, (np.arange(12) * 7 - 20).astype(dtype).reshape(3, 4))
        files.append((buf.getvalue(), ["", "", "fp16", "int8"]))
    buf = io.BytesIO()
    np.save(buf, np.asfortranarray(np.ones((2, 3), np.float32)))
    files.append((buf.getvalue(), [""]))
    for dtype, width in (("F16", 2), ("F32", 4), ("BF16", 2), ("I8", 1), ("U32", 4), ("F8_E4M3", 1)):
        head = json.dumps({"__metadata__": {"k": "v"}, "t": {"dtype": dtype, "shape": [2, 3], "data_offsets": [0, 6 * width]},
                           "u": {"dtype": dtype, "shape": [1], "data_offsets": [6 * width, 7 * width]}}).encode()
        files.append((len(head).to_bytes(8, "little") + head + bytes(range(7 * width)), ["", "fp16", "bf16"]))
    seeds = []
    for body, declared in files:
        tensor = "t" if not body.startswith(b"\x93NUMPY") else ""
        for d in declared:
            for confine in ("", "1"):
                seeds.append(body + REF + f"\x00{tensor}\x00{d}\x00{confine}".encode())
        seeds += [body + REF + f"{p}\x00{tensor}\x00\x001".encode() for p in REF_PATHS]
    return seeds


# ---- mutations ------------------------------------------------------------------------------

TOKENS = [b"(", b")", b"[", b"]", b"{", b"}", b",", b"%", b"=", b'"', b"\\", b"\n", b"-", b"0x", b"1e999",
          b"nan", b"inf", b"?", b"*", b"fp16", b"bool", b"blob(", b"const(", b"->", b"#", b"\x00", b"\xff",
          b"9" * 30, b"[" * 50, b"Content-Length: 99999999999\r\n\r\n", b"\r\n\r\n", b"b64\"", b"@model_path/../"]


def mutate(data: bytes, rng: random.Random, pool: list[bytes]) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        kind = rng.randrange(7)
        i = rng.randrange(len(b) + 1)
        if kind == 0 and b:
            b[min(i, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif kind == 1 and b:
            b[min(i, len(b) - 1)] = rng.randrange(256)
        elif kind == 2 and b:
            del b[i:i + rng.randint(1, 16)]
        elif kind == 3:
            b[i:i] = rng.choice(TOKENS)
        elif kind == 4 and b:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 64)]
        elif kind == 5:  # splice with another seed
            other = rng.choice(pool)
            j = rng.randrange(len(other) + 1)
            b = b[:i] + other[j:j + rng.randint(1, 256)] + b[i:]
        elif kind == 6 and b:
            del b[i:]  # truncation
    return bytes(b)


# ---- the loop -------------------------------------------------------------------------------

class Slow(Exception):
    pass


def _alarm(*_):
    raise Slow


def run_one(target, data: bytes) -> str | None:
    """None when `data` is handled well, else what went wrong. An input that goes over time is
    tried twice more: a finding only when every try is slow, so that a pause of the machine (a
    shared CI runner, a disk flush) is not taken for an input that is slow."""
    problem = _run_once(target, data)
    for _ in range(2 if problem == SLOW else 0):
        problem = _run_once(target, data)
        if problem != SLOW:
            return problem
    return problem


SLOW = f"took over {PER_INPUT} s"


def _run_once(target, data: bytes) -> str | None:
    signal.setitimer(signal.ITIMER_REAL, PER_INPUT)
    try:
        target(data)
    except EXPECTED:
        pass
    except Slow:
        return SLOW
    except RecursionError:
        return "RecursionError"
    except Exception as e:  # noqa: BLE001 - anything else is a finding
        return f"{type(e).__name__}: {e}"[:300]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return None


def fuzz(name: str, seconds: float, seed: int) -> tuple[int, list]:
    target, rng = TARGETS[name], random.Random(seed)
    pool = seeds(name) or [b""]
    try:   # a first call imports what the target needs: untimed, and judged again as a seed below
        target(pool[0])
    except Exception:  # noqa: BLE001
        pass
    findings, count, end = [], 0, time.monotonic() + seconds
    for data in pool:  # every seed itself first
        problem = run_one(target, data)
        count += 1
        if problem:
            findings.append((problem, data))
    while time.monotonic() < end:
        data = mutate(rng.choice(pool), rng, pool)
        problem = run_one(target, data)
        count += 1
        if problem and len(findings) < 20:
            findings.append((problem, data))
    return count, findings


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("targets", nargs="*", choices=[[], *TARGETS], default=[])
    ap.add_argument("--seconds", type=float, default=30.0, help="per target (default 30)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--replay", metavar="FILE", help="run one saved input (name the target) with its traceback")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
    if args.replay:
        TARGETS[args.targets[0]](_read(args.replay))
        return 0
    out = os.path.join(HERE, "findings")
    total = 0
    print(f"{'target':<15} {'inputs':>9} {'seconds':>8} findings")
    for name in args.targets or list(TARGETS):
        start = time.monotonic()
        count, findings = fuzz(name, args.seconds, args.seed)
        print(f"{name:<15} {count:>9,} {time.monotonic() - start:>8.1f} {len(findings)}", flush=True)
        for k, (problem, data) in enumerate(findings):
            os.makedirs(out, exist_ok=True)
            path = os.path.join(out, f"{name}-{k}.bin")
            with open(path, "wb") as f:
                f.write(data)
            print(f"  {path}: {problem}")
        total += len(findings)
    return 1 if total else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        sys.exit(2)
