"""Make the two packages of the structural-diff scenario in tests/review/: a torch MLP of six
linear layers converted with coremltools (mlp6.mlpackage), and the same model re-converted
after one layer was inserted after the third (mlp7.mlpackage): every other layer keeps its
weights, and coremltools renames every op after the new one (`linear_3` becomes `linear_4`).

    .venv/bin/pip install torch==2.13.0      # the script needs torch; the tests do not
    .venv/bin/python scripts/make_review_fixtures.py

Seeds are fixed and the conversion date is left out, so a run with the same torch and
coremltools versions writes the same files.
"""
import os
import shutil
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "review")
DATE_KEY = "com.github.apple.coremltools.conversion_date"   # changes every day: left out
WIDTH, INPUTS, OUTPUTS = 16, 8, 4


def layers(torch, count: int, seed: int):
    torch.manual_seed(seed)
    sizes = [INPUTS] + [WIDTH] * (count - 1) + [OUTPUTS]
    return [torch.nn.Linear(sizes[k], sizes[k + 1]) for k in range(count)]


def mlp(torch, linears):
    modules = []
    for k, linear in enumerate(linears):
        modules.append(linear)
        if k < len(linears) - 1:
            modules.append(torch.nn.ReLU())
    return torch.nn.Sequential(*modules).eval()


def convert(torch, model, path: str) -> None:
    import coremltools as ct
    example = torch.zeros(1, INPUTS)
    traced = torch.jit.trace(model, example)
    converted = ct.convert(traced, inputs=[ct.TensorType(name="x", shape=example.shape)],
                           convert_to="mlprogram", minimum_deployment_target=ct.target.iOS17)
    converted.user_defined_metadata.pop(DATE_KEY, None)
    if os.path.exists(path):
        shutil.rmtree(path)
    converted.save(path)


def main() -> None:
    import torch
    six = layers(torch, 6, seed=0)
    torch.manual_seed(1)
    inserted = torch.nn.Linear(WIDTH, WIDTH)
    os.makedirs(OUT, exist_ok=True)
    with torch.no_grad():
        convert(torch, mlp(torch, six), os.path.join(OUT, "mlp6.mlpackage"))
        convert(torch, mlp(torch, six[:3] + [inserted] + six[3:]), os.path.join(OUT, "mlp7.mlpackage"))
    print(f"wrote {OUT}/mlp6.mlpackage and mlp7.mlpackage")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory():
        main()
