"""Torch's outputs for the real conversions in tests/corpus/conversions (made by
scripts/make_conversions.py, whose seeded torch modules this reuses), written as
tests/run_cases/conversions/NAME.npz (`in_*` inputs, `out_*` outputs; for the stateful Llama,
`step{i}_*` per decoding step, the states after each too), so that tests/test_run.py holds
miltext's interpreter to torch on them with no torch installed.

Needs torch:  python scripts/make_run_references.py
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_conversions import ROOT, nets  # noqa: E402

OUT = os.path.join(ROOT, "tests", "run_cases", "conversions")

RNG = np.random.default_rng(1)
IMAGE = {"image": RNG.random((1, 3, 32, 32), dtype=np.float32)}
IDS = {"ids": RNG.integers(0, 64, (1, 8)).astype(np.int32)}
# name -> (torch module name, inputs by the converted model's names, its output names)
CASES = {
    "bert_fp32": ("bert", IDS, ["hidden", "pooled"]),
    "bert": ("bert", IDS, ["hidden", "pooled"]),
    "gpt2": ("gpt2", IDS, ["logits"]),
    "gpt2_int8": ("gpt2", IDS, ["logits"]),
    "gpt2_int4_blockwise": ("gpt2", IDS, ["logits"]),
    "gpt2_palettized": ("gpt2", IDS, ["logits"]),
    "resnet": ("resnet", IMAGE, ["out"]),
    "mobilenet": ("mobilenet", IMAGE, ["out"]),
    "unet": ("unet", IMAGE, ["out"]),
    "vit_flexible_batch": ("vit", IMAGE, ["out"]),
    "convnext": ("convnext", IMAGE, ["out"]),
    "lstm": ("lstm", {"x": RNG.random((1, 5, 4), dtype=np.float32)}, ["y"]),
    "gru": ("gru", {"x": RNG.random((1, 5, 4), dtype=np.float32)}, ["y"]),
}


def outputs_of(torch, module, inputs: dict) -> list:
    args = [torch.from_numpy(v.astype(np.int64) if v.dtype.kind == "i" else v) for v in inputs.values()]
    with torch.no_grad():
        out = module(*args)
    return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]


def module(torch, modules, name):
    torch.manual_seed(0)            # as make_conversions.convert seeds it
    return modules[name]().eval()


def llama(torch, modules) -> dict:
    """Three decoding steps (a prompt of 3 tokens, then one token at a time) with the cache."""
    model = module(torch, modules, "llama")
    arrays, end = {}, 0
    for step, ids in enumerate([[5, 17, 3], [42], [7]]):
        t = len(ids)
        end += t
        mask = np.triu(np.full((t, end), -np.inf, np.float32), k=end - t + 1)[None, None]
        ids_np = np.array([ids], np.int32)
        with torch.no_grad():
            logits = model(torch.from_numpy(ids_np.astype(np.int64)), torch.from_numpy(mask))
        arrays.update({f"step{step}_in_ids": ids_np, f"step{step}_in_causal_mask": mask.astype(np.float16),
                       f"step{step}_out_logits": logits.numpy(),
                       f"step{step}_state_key_cache": model.key_cache.numpy().copy(),
                       f"step{step}_state_value_cache": model.value_cache.numpy().copy()})
    return arrays


def main() -> None:
    torch, modules = nets()
    os.makedirs(OUT, exist_ok=True)
    for name, (torch_name, inputs, names) in CASES.items():
        outs = outputs_of(torch, module(torch, modules, torch_name), inputs)
        np.savez(os.path.join(OUT, name + ".npz"), **{f"in_{k}": v for k, v in inputs.items()},
                 **{f"out_{n}": o for n, o in zip(names, outs)})
        print(name, [o.shape for o in outs])
    np.savez(os.path.join(OUT, "llama_kv_cache.npz"), **llama(torch, modules))
    print("llama_kv_cache")


if __name__ == "__main__":
    main()
