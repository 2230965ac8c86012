"""Regenerate the gallery in examples/: small real models, made with torch and coremltools, written
as canonical MIL text with their weights (`miltext unpack` style: examples/NAME/model.mil and
examples/NAME/weights/weight.bin, or examples/NAME.mil when the model has no weight file).

    .venv/bin/pip install torch==2.13.0      # the generator needs torch; the tests do not
    .venv/bin/python scripts/make_examples.py [NAME ...]

Seeds are fixed and the conversion date is left out, so a run with the same torch and
coremltools versions writes the same files.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "examples")
DATE_KEY = "com.github.apple.coremltools.conversion_date"   # changes every day: left out


# -- torch models ------------------------------------------------------------------------------

def torch_models():
    import torch
    import torch.nn.functional as F
    from torch import nn

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(8, 16), nn.Linear(16, 4)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    class CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4)
            self.conv2, self.fc = nn.Conv2d(4, 8, 3), nn.Linear(8, 3)

        def forward(self, x):
            x = F.max_pool2d(F.relu(self.bn(self.conv1(x))), 2)
            x = F.relu(self.conv2(x)).mean(dim=(2, 3))
            return self.fc(x)

    class TransformerBlock(nn.Module):
        """Pre-LayerNorm: causal self-attention (2 heads) and a GELU feed-forward."""
        def __init__(self, t=4, d=16, heads=2):
            super().__init__()
            # shapes fixed: a traced x.shape would be a tensor, which coremltools cannot cast
            self.shape, self.heads_shape = (1, t, d), (1, t, heads, d // heads)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.up, self.down = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

        def forward(self, x):
            q, k, v = self.qkv(self.ln1(x)).split(self.shape[-1], dim=-1)
            q, k, v = (z.reshape(self.heads_shape).transpose(1, 2) for z in (q, k, v))
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.out(a.transpose(1, 2).reshape(self.shape))
            return x + self.down(F.gelu(self.up(self.ln2(x))))

    class LSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.fc = nn.LSTM(4, 8, batch_first=True), nn.Linear(8, 2)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.fc(out[:, -1])

    class KVCache(nn.Module):
        """One decoding step of attention over the last 8 keys and values, kept in state."""
        def __init__(self, d=8, length=8):
            super().__init__()
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.register_buffer("k_cache", torch.zeros(1, length, d))
            self.register_buffer("v_cache", torch.zeros(1, length, d))

        def forward(self, x):
            self.k_cache[:, :-1] = self.k_cache[:, 1:].clone()
            self.k_cache[:, -1:] = self.k(x)
            self.v_cache[:, :-1] = self.v_cache[:, 1:].clone()
            self.v_cache[:, -1:] = self.v(x)
            scores = self.q(x) @ self.k_cache.transpose(1, 2)
            return torch.softmax(scores, dim=-1) @ self.v_cache

    class GatedLoop(nn.Module):
        """Control flow from Python: an `if` on the data and a loop of `steps` iterations
        (scripted, not traced, so that both stay in the model as cond and while_loop)."""
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x, steps):
            h = self.fc(x)
            if h.sum() > 0:
                h = torch.relu(h)
            else:
                h = -h
            i = 0
            while i < steps:
                h = torch.tanh(self.fc(h))
                i += 1
            return h

    return torch, {"mlp": (MLP, (1, 8)), "cnn": (CNN, (1, 3, 16, 16)),
                   "transformer": (TransformerBlock, (1, 4, 16)), "lstm": (LSTM, (1, 5, 4)),
                   "kv_cache": (KVCache, (1, 1, 8)), "gated_loop": (GatedLoop, (1, 4))}


def convert(name: str, target=None, states=()):
    """The torch model `name`, traced and converted (fp16, the default for ML programs)."""
    import coremltools as ct
    torch, models = torch_models()
    cls, shape = models[name]
    torch.manual_seed(0)
    model = cls().eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, torch.rand(shape), check_trace=False)   # kv_cache: state changes per call
    return ct.convert(traced, inputs=[ct.TensorType(name="x", shape=shape, dtype=np.float16)],
                      outputs=[ct.TensorType(name="y", dtype=np.float16)], states=list(states),
                      minimum_deployment_target=target or ct.target.iOS17, skip_model_load=True)


def gated_loop():
    import coremltools as ct
    torch, models = torch_models()
    torch.manual_seed(0)
    scripted = torch.jit.script(models["gated_loop"][0]().eval())
    return ct.convert(scripted, inputs=[ct.TensorType(name="x", shape=(1, 4), dtype=np.float16),
                                        ct.TensorType(name="steps", shape=(1,), dtype=np.int32)],
                      outputs=[ct.TensorType(name="y", dtype=np.float16)],
                      minimum_deployment_target=ct.target.iOS17, skip_model_load=True)


def kv_cache():
    import coremltools as ct
    states = [ct.StateType(wrapped_type=ct.TensorType(shape=(1, 8, 8), dtype=np.float16), name=n)
              for n in ("k_cache", "v_cache")]
    return convert("kv_cache", ct.target.iOS18, states)


def compressed(config):
    """A two-layer MLP, its weights compressed by coremltools.optimize with `config`."""
    import coremltools as ct
    import coremltools.optimize.coreml as cto
    import torch
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 8)).eval()
    traced = torch.jit.trace(model, torch.rand(1, 32))
    mlmodel = ct.convert(traced, inputs=[ct.TensorType(name="x", shape=(1, 32), dtype=np.float16)],
                         outputs=[ct.TensorType(name="y", dtype=np.float16)],
                         minimum_deployment_target=ct.target.iOS18, skip_model_load=True)
    optimize = cto.linear_quantize_weights if isinstance(config, cto.OpLinearQuantizerConfig) else cto.palettize_weights
    return optimize(mlmodel, cto.OptimizationConfig(global_config=config))


def int4():
    import coremltools.optimize.coreml as cto
    return compressed(cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int4", granularity="per_block",
                                                  block_size=16, weight_threshold=0))


def palettized():
    import coremltools.optimize.coreml as cto
    return compressed(cto.OpPalettizerConfig(mode="uniform", nbits=4, weight_threshold=0))


# -- programs of coremltools' MIL builder (control flow) ---------------------------------------

def control_flow():
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    @mb.program(input_specs=[mb.TensorSpec((1, 2)), mb.TensorSpec((1,), dtype=types.bool)],
                opset_version=ct.target.iOS17)
    def prog(x, pred):
        p = mb.squeeze(x=pred)
        a, b = mb.cond(pred=p, _true_fn=lambda: (mb.add(x=x, y=1.0), mb.mul(x=x, y=2.0)),
                       _false_fn=lambda: (mb.sub(x=x, y=1.0), mb.relu(x=x)))
        c = mb.cond(pred=p, _true_fn=lambda: x, _false_fn=lambda: a)
        return a, b, c
    return prog


def while_loop():
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb

    @mb.program(input_specs=[mb.TensorSpec((1, 2))], opset_version=ct.target.iOS17)
    def prog(x):
        return mb.while_loop(_cond=lambda acc, i: mb.less(x=i, y=5),
                             _body=lambda acc, i: (mb.add(x=acc, y=x), mb.add(x=i, y=1)),
                             loop_vars=(x, 0))
    return prog


MAKERS = {
    "mlp": lambda: convert("mlp"),
    "cnn": lambda: convert("cnn"),
    "transformer": lambda: convert("transformer", __import__("coremltools").target.iOS18),
    "lstm": lambda: convert("lstm"),
    "gated_loop": gated_loop,
    "kv_cache": kv_cache,
    "int4": int4,
    "palettized": palettized,
    "control_flow": control_flow,
    "while_loop": while_loop,
}


# -- writing -----------------------------------------------------------------------------------

def write(name: str, made) -> str:
    """Write a model (an MLModel) or a program (a pymil Program) into examples/; the path written."""
    import miltext
    from miltext.model import unpack
    if not hasattr(made, "save"):
        path = os.path.join(EXAMPLES, name + ".mil")
        miltext.dump(miltext.from_coremltools(made), path)
        return path
    made.user_defined_metadata.pop(DATE_KEY, None)   # the spec that save() writes
    with tempfile.TemporaryDirectory(prefix="miltext-examples-") as tmp:
        package = os.path.join(tmp, "model.mlpackage")
        made.save(package)
        folder = os.path.join(EXAMPLES, name)
        unpack(package, folder)
    if not os.path.isdir(os.path.join(folder, "weights")):   # no weight file: one .mil file
        os.replace(os.path.join(folder, "model.mil"), folder + ".mil")
        os.rmdir(folder)
        return folder + ".mil"
    return folder


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help=f"the examples to make: {', '.join(MAKERS)} (all by default)")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.names) - set(MAKERS))
    if unknown:
        ap.error(f"no example {', '.join(unknown)}")
    from coremltools.converters.mil import Builder
    for name in args.names or MAKERS:
        Builder.name_count.clear()   # op names count per process: each example counts from 0
        print(os.path.relpath(write(name, MAKERS[name]()), ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
