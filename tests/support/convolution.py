"""A conv run in a program of its own, and the definition it must hold to (the convolution
tests of issue 30: Winograd's path, the direct path's bands in C)."""
import numpy as np

import miltext
from miltext.interpreter import run


def conv(x, w, bias=None, dtype="fp32", **attrs):
    """conv(x=%x, weight=%w, ...) run in a program of its own."""
    inputs = {"x": x, "w": w} | ({} if bias is None else {"b": bias})
    params = ", ".join(f"%{k}: ({''.join(f'{d}, ' for d in v.shape)}{dtype if k == 'x' else 'fp32'})"
                       for k, v in inputs.items())
    given = "".join(f", {k}={v}" for k, v in attrs.items()) + ("" if bias is None else ", bias=%b")
    text = f"main[CoreML7]({params}) {{\n  block0() {{\n    %y = conv(x=%x, weight=%w{given})\n  }} -> (%y)\n}}\n"
    return run(miltext.loads(text), inputs)["y"]


def definition(x, w, bias, pads, strides=(1, 1), dilations=(1, 1)):
    """The correlation in float64, window by window."""
    (t, b), (l, r) = pads
    x = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (t, b), (l, r)])
    k = [(s - 1) * d + 1 for s, d in zip(w.shape[2:], dilations)]
    cols = np.lib.stride_tricks.sliding_window_view(x, k, axis=(2, 3))[:, :, ::strides[0], ::strides[1],
                                                                       ::dilations[0], ::dilations[1]]
    y = np.einsum("nchwij,ocij->nohw", cols, w.astype(np.float64))
    return y if bias is None else y + bias[:, None, None]
