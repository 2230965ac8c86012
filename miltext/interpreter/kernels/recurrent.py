"""Recurrent layers as coremltools defines them: x is (T, B, I); weights stack their gates in
the order the op definition gives (lstm: input, forget, output, cell; gru: reset, update, new)."""
from __future__ import annotations

import numpy as np

from ..errors import RunError
from ..registry import kernel
from .activation import _sigmoid
from .linear import wide

_ACTIVATIONS = {"sigmoid": _sigmoid, "tanh": np.tanh, "relu": lambda x: np.maximum(x, 0),
                "linear": lambda x: x, "scaled_tanh": np.tanh, "sigmoid_hard": lambda x: np.clip(0.2 * x + 0.5, 0, 1)}


def _act(name: str):
    found = _ACTIVATIONS.get(str(name).lower())
    if found is None:
        raise RunError(f"activation {name!r} is none recurrent ops know")
    return found


def _lstm_pass(x, h, c, w_ih, w_hh, bias, acts, reverse):
    gate, cell, out = acts
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    hs = [None] * x.shape[0]
    hidden = h.shape[-1]
    for t in steps:
        z = x[t] @ w_ih.T + h @ w_hh.T + bias
        i, f, o, g = (z[:, k * hidden:(k + 1) * hidden] for k in range(4))
        c = gate(f) * c + gate(i) * cell(g)
        h = gate(o) * out(c)
        hs[t] = h
    return np.stack(hs), h, c


@kernel("lstm")
def lstm(a):
    x = np.asarray(a("x"))
    xf = wide(x)
    direction = str(a.scalar("direction", "forward"))
    acts = (_act(a.scalar("recurrent_activation", "sigmoid")), _act(a.scalar("cell_activation", "tanh")),
            _act(a.scalar("activation", "tanh")))
    h0, c0 = wide(a("initial_h")), wide(a("initial_c"))
    def bias_of(key):
        b = a(key, None)
        return 0 if b is None else wide(b)
    if direction == "bidirectional":
        hidden = h0.shape[-1] // 2
        f = _lstm_pass(xf, h0[..., :hidden], c0[..., :hidden], wide(a("weight_ih")), wide(a("weight_hh")),
                       bias_of("bias"), acts, False)
        b = _lstm_pass(xf, h0[..., hidden:], c0[..., hidden:], wide(a("weight_ih_back")), wide(a("weight_hh_back")),
                       bias_of("bias_back"), acts, True)
        seq = np.concatenate([f[0], b[0]], axis=-1)
        h, c = np.concatenate([f[1], b[1]], -1), np.concatenate([f[2], b[2]], -1)
    else:
        seq, h, c = _lstm_pass(xf, h0, c0, wide(a("weight_ih")), wide(a("weight_hh")), bias_of("bias"), acts,
                               direction == "reverse")
    if not a.scalar("output_sequence", False):
        seq = (seq[-1:] if direction != "reverse" else seq[:1]) if direction != "bidirectional" else \
            np.concatenate([seq[-1:, ..., :h0.shape[-1] // 2], seq[:1, ..., h0.shape[-1] // 2:]], -1)
    return seq.astype(x.dtype), h.astype(x.dtype), c.astype(x.dtype)


@kernel("gru")
def gru(a):
    x = np.asarray(a("x"))
    xf = wide(x)
    h = wide(a("initial_h"))
    w_ih, w_hh = wide(a("weight_ih")), wide(a("weight_hh"))
    b = a("input_bias", None)
    b = 0 if b is None else wide(b)
    gate, act = _act(a.scalar("recurrent_activation", "sigmoid")), _act(a.scalar("activation", "tanh"))
    hidden = h.shape[-1]
    reverse = str(a.scalar("direction", "forward")) == "reverse"
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    hs = [None] * x.shape[0]
    for t in steps:
        zi, zh = xf[t] @ w_ih.T + b, h @ w_hh.T
        r = gate(zi[:, :hidden] + zh[:, :hidden])
        z = gate(zi[:, hidden:2 * hidden] + zh[:, hidden:2 * hidden])
        n = act(zi[:, 2 * hidden:] + r * zh[:, 2 * hidden:])
        h = (1 - z) * n + z * h
        hs[t] = h
    seq = np.stack(hs)
    if not a.scalar("output_sequence", False):
        seq = seq[:1] if reverse else seq[-1:]
    return seq.astype(x.dtype), h.astype(x.dtype)


@kernel("rnn")
def rnn(a):
    x = np.asarray(a("x"))
    h = wide(a("initial_h"))
    w_ih, w_hh = wide(a("weight_ih")), wide(a("weight_hh"))
    b = a("bias", None)
    b = 0 if b is None else wide(b)
    act = _act(a.scalar("activation", "tanh"))
    reverse = str(a.scalar("direction", "forward")) == "reverse"
    steps = range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])
    hs = [None] * x.shape[0]
    for t in steps:
        h = act(wide(x[t]) @ w_ih.T + h @ w_hh.T + b)
        hs[t] = h
    seq = np.stack(hs)
    if not a.scalar("output_sequence", False):
        seq = seq[:1] if reverse else seq[-1:]
    return seq.astype(x.dtype), h.astype(x.dtype)
