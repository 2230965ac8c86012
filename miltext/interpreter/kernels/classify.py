"""classify: a classifier's output, the top class and every class's probability."""
from __future__ import annotations

import numpy as np

from ..registry import kernel


@kernel("classify")
def classify(a):
    probabilities = np.asarray(a("probabilities")).reshape(-1)
    classes = a("classes")
    labels = [c.item() if hasattr(c, "item") else c for c in
              (classes if isinstance(classes, (list, tuple)) else np.asarray(classes).reshape(-1))]
    top = labels[int(np.argmax(probabilities))]
    return np.asarray(top), {label: np.float64(p) for label, p in zip(labels, probabilities)}
