"""`check`'s verdicts on random single ops, against coremltools' own inference.

    python scripts/check_against_coremltools.py [--seed N] [--count N] [--show agree|alarm|gap]

Each case is one op (add, matmul, linear, conv, pooling, reshape, transpose, concat, split,
gather, reductions, norms, ...) written in the shorthand with random shapes and parameters.
`check` says error or not; coremltools' type inference (the builder, through
miltext.infer.coremltools_rules) accepts the op or refuses it. Printed per op type:

- alarm: check reports an error that coremltools' inference lets through. Often a mistake
  Core ML's compiler or runtime refuses and coremltools' Python side does not look at (a
  softmax axis out of range, a batch_norm mean of the wrong size); each kind needs a reason.
- gap: coremltools refuses an op check lets through: a rule check may be missing.

Needs coremltools. Exits 0; it is a measuring tool, not a test.
"""
from __future__ import annotations

import argparse
import logging
import os
import random
import sys
import warnings
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

import miltext  # noqa: E402
from miltext.infer import coremltools_rules, walk  # noqa: E402
from miltext.infer.errors import InferenceError, Refused  # noqa: E402


def shape(rng, rank=None) -> list:
    return [rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(0, 4) if rank is None else rank)]


def typed(dims, dtype="fp32") -> str:
    return "(" + "".join(f"{d}, " for d in dims) + dtype + ")"


def ints(rng, n, low=-4, high=4) -> str:
    return "[" + ", ".join(str(rng.randint(low, high)) for _ in range(n)) + "]"


def weight(dims) -> str:
    return f"{typed(dims)}(blob(64))"


def case(rng):
    """(op type, {input name: shape}, the op's line)."""
    a, b = shape(rng), shape(rng)
    pick = rng.choice
    cases = {
        "add": lambda: ({"x": a, "y": b}, "%r = add(x=%x, y=%y)"),
        "matmul": lambda: ({"x": a, "y": b}, f"%r = matmul(x=%x, y=%y, transpose_x={pick(['False', 'True'])}, "
                                             f"transpose_y={pick(['False', 'True'])})"),
        "linear": lambda: ({"x": a}, f"%r = linear(x=%x, weight={weight(shape(rng, pick([1, 2, 2])))}, "
                                     f"bias={weight(shape(rng, pick([0, 1, 1])))})"),
        "reshape": lambda: ({"x": a}, f"%r = reshape(x=%x, shape={ints(rng, rng.randint(0, 4), -1, 6)})"),
        "transpose": lambda: ({"x": a}, f"%r = transpose(x=%x, perm={ints(rng, rng.randint(0, 4), -3, 3)})"),
        "concat": lambda: ({"x": a, "y": b}, f"%r = concat(values=(%x, %y), axis={rng.randint(-4, 4)}, "
                                             "interleave=False)"),
        "stack": lambda: ({"x": a, "y": b}, f"%r = stack(values=(%x, %y), axis={rng.randint(-4, 4)})"),
        "split": lambda: ({"x": a}, f"%r, %r2 = split(x=%x, split_sizes={ints(rng, 2, 1, 4)}, "
                                    f"axis={rng.randint(-3, 3)})"),
        "gather": lambda: ({"x": a}, f"%r = gather(x=%x, indices={ints(rng, rng.randint(1, 3), -5, 5)}, "
                                     f"axis={rng.randint(-3, 3)})"),
        "reduce_sum": lambda: ({"x": a}, f"%r = reduce_sum(x=%x, axes={ints(rng, rng.randint(1, 3))}, "
                                         f"keep_dims={pick(['False', 'True'])})"),
        "softmax": lambda: ({"x": a}, f"%r = softmax(x=%x, axis={rng.randint(-5, 5)})"),
        "conv": lambda: ({"x": shape(rng, pick([3, 4]))},
                         f"%r = conv(x=%x, weight={weight(shape(rng, pick([3, 4])))}, groups={pick([1, 1, 2, 3])}, "
                         f"pad_type=\"{pick(['valid', 'same'])}\", strides={ints(rng, pick([1, 2]), 1, 2)})"),
        "max_pool": lambda: ({"x": shape(rng, pick([3, 4, 5]))},
                             f"%r = max_pool(x=%x, kernel_sizes={ints(rng, pick([1, 2, 3]), 1, 2)}, "
                             f"strides={ints(rng, pick([1, 2]), 1, 2)}, pad_type=\"valid\")"),
        "slice_by_index": lambda: ({"x": a}, f"%r = slice_by_index(x=%x, begin={ints(rng, len(a) + pick([0, 1]), -3, 3)}, "
                                             f"end={ints(rng, len(a), -3, 4)})"),
        "squeeze": lambda: ({"x": a}, f"%r = squeeze(x=%x, axes={ints(rng, rng.randint(1, 2))})"),
        "expand_dims": lambda: ({"x": a}, f"%r = expand_dims(x=%x, axes={ints(rng, rng.randint(1, 2), -5, 5)})"),
        "layer_norm": lambda: ({"x": a}, f"%r = layer_norm(x=%x, axes={ints(rng, rng.randint(1, 2), -3, 3)}, "
                                         f"gamma={weight(shape(rng, rng.randint(0, 2)))})"),
        "tile": lambda: ({"x": a}, f"%r = tile(x=%x, reps={ints(rng, rng.randint(0, 4), 1, 3)})"),
        "pad": lambda: ({"x": a}, f"%r = pad(x=%x, pad={ints(rng, pick([0, 2, 4]), 0, 2)})"),
        "batch_norm": lambda: ({"x": a}, f"%r = batch_norm(x=%x, mean={weight(shape(rng, 1))}, "
                                         f"variance={weight(shape(rng, 1))})"),
        "prelu": lambda: ({"x": a}, f"%r = prelu(x=%x, alpha={weight(shape(rng, 1))})"),
    }
    op_type = rng.choice(sorted(cases))
    inputs, line = cases[op_type]()
    return op_type, inputs, line


def coremltools_verdict(program):
    """"ok" or "refused" for the program's last op; None when coremltools cannot be asked."""
    verdicts = []

    def visit(op, operands):
        if op.type == "const":
            return None
        try:
            types = coremltools_rules.infer(operands)
        except Refused:
            verdicts.append("refused")
            return None
        except (InferenceError, Exception):   # noqa: BLE001 (coremltools' own failures are not verdicts)
            verdicts.append(None)
            return None
        verdicts.append("ok")
        return types
    walk(program, visit)
    return verdicts[-1] if verdicts else None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--count", type=int, default=1000)
    p.add_argument("--show", choices=("agree", "alarm", "gap"), action="append", default=[])
    args = p.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    rng = random.Random(args.seed)
    tally: dict = {}
    for _ in range(args.count):
        op_type, inputs, line = case(rng)
        signature = ", ".join(f"%{k}: {typed(v)}" for k, v in inputs.items())
        text = f"main[CoreML7]({signature}) {{\n  block0() {{\n    {line}\n  }} -> (%r)\n}}\n"
        program = miltext.loads(text)
        errors = [d for d in miltext.check(program, source=text) if d.is_error]
        theirs = coremltools_verdict(miltext.loads(text))
        if theirs is None:
            continue
        kind = "alarm" if errors and theirs == "ok" else "gap" if not errors and theirs == "refused" else "agree"
        tally.setdefault(op_type, Counter())[kind] += 1
        if kind in args.show:
            print(f"{kind}: {line}  with {inputs}" + (f"\n   check: {errors[0].message}" if errors else ""))
    print(f"{'op':<16}{'agree':>7}{'alarm':>7}{'gap':>7}")
    for op_type, counts in sorted(tally.items()):
        print(f"{op_type:<16}{counts['agree']:>7}{counts['alarm']:>7}{counts['gap']:>7}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
