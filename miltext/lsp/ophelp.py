"""What the op table (miltext/data/ops.json, through miltext.ops) says of an op, for hover and
completion: its signature in a function's opset, the ops an opset has, an op's input names."""
from __future__ import annotations

import re
from bisect import bisect_right

from .. import ops

# The op type of an op line: after the outputs' `=`, before its parenthesis (coremltools'
# print may put scopes in brackets between).
OP_TYPE = re.compile(r'=\s*([A-Za-z_][\w.]*)\s*(?:\[[^\]\n]*\])?\s*\(')


def op_type_at(line: str, column: int) -> tuple | None:
    """(op type, start, end) of the op type written at `column` of an op line."""
    for m in OP_TYPE.finditer(line):
        if m.start(1) <= column <= m.end(1):
            return m.group(1), m.start(1), m.end(1)
    return None


def opset_at(program, line: int) -> str:
    """The opset in force on `line` (0-based): its function's."""
    if program is None:
        return ""
    functions = sorted((fn.loc[0] - 1, fn.opset) for fn in program.functions.values() if fn.loc)
    i = bisect_right(functions, (line, "\uffff")) - 1
    return functions[i][1] if i >= 0 else ""


def known(op_type: str) -> bool:
    return op_type in ops.table()["ops"]


def op_names(opset: str) -> list[str]:
    """The ops `opset` has (every op the table knows when the opset is not known)."""
    table = ops.table()["ops"]
    if opset not in ops.table()["opsets"]:
        return sorted(table)
    return sorted(name for name, variants in table.items() if any(opset in v["opsets"] for v in variants))


def inputs(op_type: str, opset: str) -> list[dict]:
    """The inputs of the op's definition in force in `opset` (its newest when none is)."""
    found = ops.variant(op_type, opset)
    if found is None:
        variants = ops.table()["ops"].get(op_type, [])
        found = variants[-1] if variants else None
    return found["inputs"] if found else []


def signature(op_type: str, opset: str) -> str | None:
    """Markdown: the op's inputs in `opset`, required or optional, and the dtypes each takes."""
    variants = ops.table()["ops"].get(op_type)
    if not variants:
        return None
    names = ops.table()["opsets"]
    found = ops.variant(op_type, opset)
    if found is None:
        where = ", ".join(o for v in variants for o in v["opsets"])
        head = f"**{op_type}** is not in {opset or 'this opset'}; it is in {where}"
        found = variants[-1]
        head += f" (its inputs there, as of {found['defined_in']}):"
    else:
        head = f"**{op_type}** in {opset}" + (f" ({names[opset]})" if opset in names else "") + \
            f", as defined in {found['defined_in']}"
    rows = ["| input | | dtypes |", "|---|---|---|"]
    for spec in found["inputs"]:
        how = "required" if not spec["optional"] else "optional"
        if spec.get("default") is not None:
            how += f", default {spec['default']!r}"
        if spec.get("const"):
            how += ", const"
        dtypes = ", ".join(spec.get("dtypes") or []) or spec.get("kind", "")
        rows.append(f"| `{spec['name']}` | {how} | {dtypes} |")
    return head + "\n\n" + "\n".join(rows)
