"""A comparison's report (compare.py's dict) as text for a reader, or as JSON."""
from __future__ import annotations

import json

WORST = 10     # paired ops the table shows


def as_json(report: dict) -> str:
    return json.dumps(_finite(report), indent=1, allow_nan=False) + "\n"


def _finite(o):
    """inf and NaN (an error where one side is not finite) as the strings "inf" and "nan"."""
    if isinstance(o, float) and o != o:
        return "nan"
    if isinstance(o, float) and o in (float("inf"), float("-inf")):
        return "inf" if o > 0 else "-inf"
    if isinstance(o, dict):
        return {k: _finite(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite(v) for v in o]
    return o


def as_text(report: dict) -> str:
    out = []
    first = report["first_divergence"]
    if first is None:
        out.append("no divergence: every compared value is within tolerance" if report["agree"] else
                   "no first divergence found: no op leaves tolerance with all its inputs within it")
    else:
        out.append(f"first divergence: %{first['key']} ({first['outside']} of {first['size']} elements outside "
                   f"rtol={first['rtol']:g} atol={first['atol']:g}; max abs error {first['max_abs']:.3g}, "
                   f"max rel error {first['max_rel']:.3g})")
        for side in ("a", "b"):
            place, nonfinite, span = first[side], first["nonfinite"][side], first["range"][side]
            out.append(f"  {side.upper()} {_where(place)}")
            if place["text"]:
                out.append(f"      {place['text']}")
            out.append(f"      range {_range(span)}, {nonfinite['nan']} NaN, {nonfinite['inf']} inf")
    if report["outputs"]:
        out.append("\noutputs:")
        for name, o in report["outputs"].items():
            state = "ok" if o["within"] else "DIFFERS"
            detail = o.get("why") or f"max abs error {o['max_abs']:.3g}, max rel error {o['max_rel']:.3g}, " \
                                     f"{o['outside']} of {o['size']} outside"
            out.append(f"  %{name} ~ %{o['b']}: {state} ({detail})")
    worst = sorted(report["pairs"], key=lambda p: (p["outside"] == 0, -p["max_rel"]))[:WORST]
    worst = [p for p in worst if p["max_abs"] > 0]
    if worst:
        out.append(f"\nworst paired ops ({len(report['pairs'])} compared):")
        out.append(f"  {'A var':<28} {'B var':<28} {'type':<14} {'max abs':>10} {'max rel':>10} outside")
        for p in worst:
            out.append(f"  {_short(p['a']['var']):<28} {_short(p['b']['var']):<28} {p['a']['type'] or '':<14} "
                       f"{p['max_abs']:>10.3g} {p['max_rel']:>10.3g} {p['outside']}/{p['size'] * p['passes']}")
    for side, label in (("only_a", "only in A"), ("only_b", "only in B")):
        if report[side]:
            out.append(f"\n{label} ({len(report[side])}):")
            out += [f"  {_where(p)}" for p in report[side][:WORST]]
            if len(report[side]) > WORST:
                out.append(f"  ... and {len(report[side]) - WORST} more")
    if report["incomparable"]:
        out.append(f"\nnot compared ({len(report['incomparable'])}):")
        out += [f"  %{p['a']['var']} ~ %{p['b']['var']}: {p['why']}" for p in report["incomparable"][:WORST]]
    return "\n".join(out) + "\n"


def _where(place: dict) -> str:
    at = f"{place['file']}:{place['line']}" if place["line"] else place["file"]
    what = " ".join(x for x in (place["type"], f'"{place["op"]}"' if place["op"] else None) if x)
    return f"{at}: %{place['var']}" + (f" = {what}" if what else "")


def _range(span) -> str:
    return "(no finite values)" if span is None else f"[{span[0]:.6g}, {span[1]:.6g}]"


def _short(name, width: int = 28) -> str:
    name = name or "-"
    return name if len(name) <= width else name[:width - 1] + "…"
