"""Where the numbers go wrong: every intermediate value of a run (`trace`), and two runs
compared op by op to the first op whose output leaves tolerance (`compare`).

    from miltext.numerics import trace          # run --trace's values, through a callback
    from miltext.numerics.compare import Side, compare_models
    report = compare_models(Side("fp32.mlpackage", "main"), Side("fp16.mlpackage", "main"), {"x": x})
    report["first_divergence"]["a"]["op"]

trace.py keys and writes values, values.py reads them back, tolerances.py says how far apart
two values may be, compare.py pairs and measures, report.py writes the report.
"""
from __future__ import annotations

from .trace import trace

__all__ = ["trace"]
