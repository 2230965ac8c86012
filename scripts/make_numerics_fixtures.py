"""The models tests/test_compare.py and tests/test_trace.py run: small torch modules converted by
coremltools into tests/corpus/numerics/ (committed; torch stays out of the test run), each
beside the input it runs on (NAME_x.npy).

    sumsq_fp32 / sumsq_fp16   x*x (every element below 65504), a sum of the squares (past fp16's
                              65504), a square root: fp32 and fp16 compute precision
    cnn_a / cnn_b             a small CNN converted from two modules of other attribute names,
                              cnn_b's second conv weight 1 % larger
    cnn_same                  cnn_a's weights in the other module: agrees with cnn_a
    mlp / mlp_int8            two linears; in mlp_int8 the first one's weight is int8
                              (coremltools.optimize.coreml.linear_quantize_weights on that op alone)
    loop                      a while_loop made with coremltools' MIL builder

Run it in a venv with torch (CPU) and coremltools 9, never the test run's:

    python -m venv build/fixtures-venv
    build/fixtures-venv/bin/pip install torch coremltools==9.0
    build/fixtures-venv/bin/python scripts/make_numerics_fixtures.py
"""
from __future__ import annotations

import os
import shutil

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "corpus", "numerics")


def convert(module, x, name: str, precision: str = "fp32"):
    import coremltools as ct
    import torch
    traced = torch.jit.trace(module.eval(), torch.from_numpy(x))
    model = ct.convert(traced, inputs=[ct.TensorType(name="x", shape=x.shape)], convert_to="mlprogram",
                       minimum_deployment_target=ct.target.iOS17,
                       compute_precision=ct.precision.FLOAT16 if precision == "fp16" else ct.precision.FLOAT32)
    save(model, name)
    return model


def save(model, name: str) -> None:
    path = os.path.join(OUT, f"{name}.mlpackage")
    shutil.rmtree(path, ignore_errors=True)
    model.save(path)


def sumsq():
    import torch

    class SumSq(torch.nn.Module):
        def forward(self, x):
            squares = x * x
            return torch.sqrt(torch.sum(squares, dim=-1, keepdim=True)) + 1.0

    x = np.linspace(200.0, 250.0, 16, dtype=np.float32).reshape(1, 16)   # 250^2 = 62500 < 65504
    np.save(os.path.join(OUT, "sumsq_x.npy"), x)
    convert(SumSq(), x, "sumsq_fp32")
    convert(SumSq(), x, "sumsq_fp16", "fp16")


def cnns():
    import torch
    from torch import nn

    class CnnA(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
            self.head = nn.Linear(8, 4)

        def forward(self, x):
            y = torch.relu(self.conv2(torch.relu(self.conv1(x))))
            return self.head(y.mean(dim=(2, 3)))

    class CnnB(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem, self.mixer = nn.Conv2d(3, 8, 3, padding=1), nn.Conv2d(8, 8, 3, padding=1)
            self.classifier = nn.Linear(8, 4)

        def forward(self, x):
            y = torch.relu(self.mixer(torch.relu(self.stem(x))))
            return self.classifier(y.mean(dim=(2, 3)))

    torch.manual_seed(0)
    a = CnnA()
    b = CnnB()
    b.load_state_dict({k.replace("conv1", "stem").replace("conv2", "mixer").replace("head", "classifier"): v
                       for k, v in a.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((1, 3, 12, 12)).astype(np.float32)
    np.save(os.path.join(OUT, "cnn_x.npy"), x)
    convert(a, x, "cnn_a")
    convert(b, x, "cnn_same")
    with torch.no_grad():
        b.mixer.weight.mul_(1.01)
    convert(b, x, "cnn_b")


def mlps():
    import coremltools.optimize.coreml as cto
    import torch
    from torch import nn
    torch.manual_seed(1)
    module = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8))
    x = np.random.default_rng(1).standard_normal((1, 16)).astype(np.float32)
    np.save(os.path.join(OUT, "mlp_x.npy"), x)
    model = convert(module, x, "mlp")
    program = model._mil_program
    first = next(op for op in program.functions["main"].operations
                 if op.op_type == "const" and op.outputs[0].shape == (32, 16))
    config = cto.OptimizationConfig(op_name_configs={
        first.name: cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8", weight_threshold=0)})
    save(cto.linear_quantize_weights(model, config), "mlp_int8")


def loop():
    import coremltools as ct
    from coremltools.converters.mil import Builder as mb

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 4))], opset_version=ct.target.iOS17)
    def program(x):
        def cond(i, v):
            return mb.less(x=i, y=np.int32(3), name="go")

        def body(i, v):
            return mb.add(x=i, y=np.int32(1), name="next_i"), mb.mul(x=v, y=np.float32(1.5), name="scaled")

        _, v = mb.while_loop(_cond=cond, _body=body, loop_vars=(mb.const(val=np.int32(0), name="start"), x),
                             name="loop")
        return mb.relu(x=v, name="out")

    np.save(os.path.join(OUT, "loop_x.npy"), np.array([[1.0, -2.0, 3.0, -4.0]], np.float32))
    save(ct.convert(program, convert_to="mlprogram", minimum_deployment_target=ct.target.iOS17), "loop")


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    sumsq()
    cnns()
    mlps()
    loop()
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
