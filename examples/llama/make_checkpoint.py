"""Make the checkpoint decoder.mil reads: random weights of a Llama-style decoder with the names
a Hugging Face Llama checkpoint uses (fp32, as checkpoints usually are), and the rotary
embedding tables and the causal mask as .npy files. Needs numpy and safetensors
(`pip install -e '.[weights]'` in miltext's checkout).

    python make_checkpoint.py [FOLDER]      # FOLDER defaults to this file's folder
"""
import os
import sys

import numpy as np
from safetensors.numpy import save_file

DIM, HEADS, FFN, VOCAB, SEQ, LAYERS = 32, 4, 64, 64, 8, 2
HEAD_DIM = DIM // HEADS


def weights(seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)

    def linear(out_features, in_features):
        return (rng.standard_normal((out_features, in_features)) / np.sqrt(in_features)).astype(np.float32)

    tensors = {"model.embed_tokens.weight": rng.standard_normal((VOCAB, DIM)).astype(np.float32),
               "model.norm.weight": np.ones(DIM, np.float32), "lm_head.weight": linear(VOCAB, DIM)}
    for i in range(LAYERS):
        p = f"model.layers.{i}"
        tensors[f"{p}.input_layernorm.weight"] = np.ones(DIM, np.float32)
        tensors[f"{p}.post_attention_layernorm.weight"] = np.ones(DIM, np.float32)
        for proj in "qkvo":
            tensors[f"{p}.self_attn.{proj}_proj.weight"] = linear(DIM, DIM)
        tensors[f"{p}.mlp.gate_proj.weight"] = linear(FFN, DIM)
        tensors[f"{p}.mlp.up_proj.weight"] = linear(FFN, DIM)
        tensors[f"{p}.mlp.down_proj.weight"] = linear(DIM, FFN)
    return tensors


def rope_tables(base: float = 10000.0):
    inv_freq = 1.0 / base ** (np.arange(0, HEAD_DIM, 2) / HEAD_DIM)
    angles = np.outer(np.arange(SEQ), inv_freq)
    angles = np.concatenate([angles, angles], axis=-1)           # (SEQ, HEAD_DIM), halves rotated
    return np.cos(angles).astype(np.float16), np.sin(angles).astype(np.float16)


def main(folder: str) -> None:
    save_file(weights(), os.path.join(folder, "checkpoint.safetensors"))
    cos, sin = rope_tables()
    np.save(os.path.join(folder, "rope_cos.npy"), cos)
    np.save(os.path.join(folder, "rope_sin.npy"), sin)
    mask = np.triu(np.full((SEQ, SEQ), -np.inf, np.float16), k=1)  # a token sees those before it
    np.save(os.path.join(folder, "causal_mask.npy"), mask)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
