"""Regenerate tests/corpus/conversions/: small real torch models converted by coremltools, the
material `check`, `infer` and the inference audit (scripts/audit_inference.py) are measured on.

    .venv/bin/pip install torch==2.13.0      # the generator needs torch; the tests do not
    .venv/bin/python scripts/make_conversions.py [NAME ...]

Each conversion is written as NAME.pb (the ML program, `SerializeToString(deterministic=True)`)
and, when it has blob weights, NAME.weight.bin (the `@model_path/weights/weight.bin` it points
at). The models are tiny and seeded, and shapes are taken from the inputs at run time where
real models do it (`x.shape` in attention), so the programs carry the shape arithmetic
(shape, gather, concat, fill, reshape) of real transformer conversions.
"""
import argparse
import math
import os
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "corpus", "conversions")


def nets():
    """The torch modules, by name (a function: torch is imported only here)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class SelfAttention(nn.Module):
        """Multi-head attention whose head split reads the batch and length from x at run time."""
        def __init__(self, d, heads, causal=False, sdpa=False):
            super().__init__()
            self.heads, self.causal, self.sdpa = heads, causal, sdpa
            self.scale = math.sqrt(d // heads)
            self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))

        def split(self, z):
            b, t, _ = z.shape
            return z.view(b, t, self.heads, -1).transpose(1, 2)

        def forward(self, x, mask=None):
            b, t, d = x.shape
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            if self.sdpa:
                a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.causal)
            else:
                scores = q @ k.transpose(-1, -2) / self.scale
                if mask is not None:
                    scores = scores + mask
                a = torch.softmax(scores, dim=-1) @ v
            return self.o(a.transpose(1, 2).reshape(b, t, d))

    class Bert(nn.Module):
        """A BERT-style encoder: token, position and segment embeddings, post-LN layers,
        an all-ones mask made from the input's shape, and a pooler."""
        def __init__(self, vocab=64, d=32, heads=4, layers=2, max_len=16):
            super().__init__()
            self.tok, self.pos, self.seg = nn.Embedding(vocab, d), nn.Embedding(max_len, d), nn.Embedding(2, d)
            self.ln = nn.LayerNorm(d)
            self.attn = nn.ModuleList(SelfAttention(d, heads) for _ in range(layers))
            self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ff = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                    for _ in range(layers))
            self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.pool = nn.Linear(d, d)

        def forward(self, ids):
            b, t = ids.shape
            positions = torch.arange(t).unsqueeze(0)
            segments = torch.zeros_like(ids)
            mask = torch.ones(b, t)                      # HF: no mask given, all ones
            mask = (1.0 - mask[:, None, None, :]) * -10000.0
            x = self.ln(self.tok(ids) + self.pos(positions) + self.seg(segments))
            for attn, ln1, ff, ln2 in zip(self.attn, self.ln1, self.ff, self.ln2):
                x = ln1(x + attn(x, mask))
                x = ln2(x + ff(x))
            return x, torch.tanh(self.pool(x[:, 0]))

    class GPT2(nn.Module):
        """A GPT-2-style decoder: learned positions, pre-LN blocks, a causal mask sliced from a
        buffer to the input's length, tanh-GELU, tied output head."""
        def __init__(self, vocab=64, d=32, heads=4, layers=2, max_len=16):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(max_len, d)
            self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))
            self.attn = nn.ModuleList(SelfAttention(d, heads) for _ in range(layers))
            self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ff = nn.ModuleList(nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"),
                                                  nn.Linear(4 * d, d)) for _ in range(layers))
            self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ln_f = nn.LayerNorm(d)

        def forward(self, ids):
            t = ids.size(-1)
            x = self.tok(ids) + self.pos(torch.arange(0, t, dtype=torch.long).unsqueeze(0))
            mask = (1.0 - self.bias[:, :, :t, :t]) * -1e4
            for attn, ln1, ff, ln2 in zip(self.attn, self.ln1, self.ff, self.ln2):
                x = x + attn(ln1(x), mask)
                x = x + ff(ln2(x))
            return self.ln_f(x) @ self.tok.weight.t()

    class GPT2BuiltMask(GPT2):
        """GPT-2 whose causal mask is built from the length at run time, as Hugging Face code
        does: a triangle of -inf (full, triu) and positions compared (arange, masked_fill)."""
        def forward(self, ids):
            t = ids.size(-1)
            positions = torch.arange(t)
            x = self.tok(ids) + self.pos(positions.unsqueeze(0))
            mask = torch.full((t, t), -1e4).triu(1)[None, None]
            future = positions[None, :] > positions[:, None]
            for attn, ln1, ff, ln2 in zip(self.attn, self.ln1, self.ff, self.ln2):
                x = x + attn(ln1(x), mask.masked_fill(future, -1e4))
                x = x + ff(ln2(x))
            return self.ln_f(x) @ self.tok.weight.t()

    class RMSNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    def rotate(x, half):
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    class Llama(nn.Module):
        """A Llama-style decoder with its KV cache in state (coremltools' StateType): RMSNorm,
        rotary positions, grouped-query attention, SwiGLU. The query length and the cache end
        come from the inputs' shapes, as in Apple's stateful Llama example."""
        def __init__(self, vocab=64, d=32, heads=4, kv_heads=2, layers=2, max_len=16):
            super().__init__()
            self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
            self.tok = nn.Embedding(vocab, d)
            self.q = nn.ModuleList(nn.Linear(d, d, bias=False) for _ in range(layers))
            self.kv = nn.ModuleList(nn.Linear(d, 2 * kv_heads * self.hd, bias=False) for _ in range(layers))
            self.o = nn.ModuleList(nn.Linear(d, d, bias=False) for _ in range(layers))
            self.gate_up = nn.ModuleList(nn.Linear(d, 4 * d, bias=False) for _ in range(layers))
            self.down = nn.ModuleList(nn.Linear(2 * d, d, bias=False) for _ in range(layers))
            self.n1 = nn.ModuleList(RMSNorm(d) for _ in range(layers))
            self.n2 = nn.ModuleList(RMSNorm(d) for _ in range(layers))
            self.norm, self.head = RMSNorm(d), nn.Linear(d, vocab, bias=False)
            inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
            angles = torch.outer(torch.arange(max_len).float(), inv)
            self.register_buffer("cos", torch.cat((angles, angles), -1).cos())
            self.register_buffer("sin", torch.cat((angles, angles), -1).sin())
            cache = (layers, 1, kv_heads, max_len, self.hd)
            self.register_buffer("key_cache", torch.zeros(cache))
            self.register_buffer("value_cache", torch.zeros(cache))

        def forward(self, ids, causal_mask):
            b, t = 1, ids.shape[-1]    # the cache holds one sequence
            end = causal_mask.shape[-1]
            past = end - t
            cos, sin = self.cos[past:end], self.sin[past:end]
            x = self.tok(ids)
            for i in range(len(self.q)):
                h = self.n1[i](x)
                q = self.q[i](h).view(b, t, self.heads, self.hd).transpose(1, 2)
                k, v = self.kv[i](h).view(b, t, 2 * self.kv_heads, self.hd).transpose(1, 2).chunk(2, dim=1)
                q, k = q * cos + rotate(q, self.hd // 2) * sin, k * cos + rotate(k, self.hd // 2) * sin
                self.key_cache[i:i + 1, :, :, past:end] = k.unsqueeze(0)
                self.value_cache[i:i + 1, :, :, past:end] = v.unsqueeze(0)
                keys = self.key_cache[i, :, :, :end].repeat_interleave(self.heads // self.kv_heads, dim=1)
                values = self.value_cache[i, :, :, :end].repeat_interleave(self.heads // self.kv_heads, dim=1)
                a = F.scaled_dot_product_attention(q, keys, values, attn_mask=causal_mask)
                x = x + self.o[i](a.transpose(1, 2).reshape(b, t, -1))
                gate, up = self.gate_up[i](self.n2[i](x)).chunk(2, dim=-1)
                x = x + self.down[i](F.silu(gate) * up)
            return self.head(self.norm(x))

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.skip(x))

    class ResNet(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, 2, 3, bias=False), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            self.layers = nn.Sequential(BasicBlock(8, 8, 1), BasicBlock(8, 16, 2))
            self.fc = nn.Linear(16, classes)

        def forward(self, x):
            x = F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1)
            return self.fc(torch.flatten(x, 1))

    class InvertedResidual(nn.Module):
        """MobileNetV3's block: expand, depthwise, squeeze-and-excite, project."""
        def __init__(self, c, expand=4):
            super().__init__()
            e = c * expand
            self.expand = nn.Sequential(nn.Conv2d(c, e, 1, bias=False), nn.BatchNorm2d(e), nn.Hardswish())
            self.dw = nn.Sequential(nn.Conv2d(e, e, 3, 1, 1, groups=e, bias=False), nn.BatchNorm2d(e), nn.ReLU6())
            self.se1, self.se2 = nn.Conv2d(e, e // 4, 1), nn.Conv2d(e // 4, e, 1)
            self.project = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), nn.BatchNorm2d(c))

        def forward(self, x):
            h = self.dw(self.expand(x))
            s = F.hardsigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(h, 1)))))
            return x + self.project(h * s)

    class MobileNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.Hardswish())
            self.blocks = nn.Sequential(InvertedResidual(8), InvertedResidual(8))
            self.head = nn.Linear(8, 10)

        def forward(self, x):
            return self.head(self.blocks(self.stem(x)).mean((2, 3)))

    class ViT(nn.Module):
        """Patch embedding, a class token expanded to the batch, learned positions, pre-LN
        blocks with scaled_dot_product_attention."""
        def __init__(self, d=32, heads=4, layers=2, patch=8, size=32):
            super().__init__()
            self.embed = nn.Conv2d(3, d, patch, patch)
            self.cls = nn.Parameter(torch.randn(1, 1, d))
            self.pos = nn.Parameter(torch.randn(1, (size // patch) ** 2 + 1, d))
            self.attn = nn.ModuleList(SelfAttention(d, heads, sdpa=True) for _ in range(layers))
            self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ff = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                    for _ in range(layers))
            self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.head = nn.Linear(d, 10)

        def forward(self, x):
            x = self.embed(x).flatten(2).transpose(1, 2)
            x = torch.cat((self.cls.expand(x.shape[0], -1, -1), x), dim=1) + self.pos
            for attn, ln1, ff, ln2 in zip(self.attn, self.ln1, self.ff, self.ln2):
                x = x + attn(ln1(x))
                x = x + ff(ln2(x))
            return self.head(x[:, 0])

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.down = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1), nn.ReLU())
            self.mid = nn.Sequential(nn.Conv2d(8, 16, 3, 1, 1), nn.ReLU())
            self.up = nn.ConvTranspose2d(16, 8, 2, 2)
            self.out = nn.Conv2d(32, 2, 1)

        def forward(self, x):
            skip = self.down(x)
            h = self.mid(F.max_pool2d(skip, 2))
            resized = F.interpolate(h, scale_factor=2.0, mode="bilinear", align_corners=False)
            return self.out(torch.cat((self.up(h), skip, resized), dim=1))

    class GRU(nn.Module):
        def __init__(self):
            super().__init__()
            self.gru, self.fc = nn.GRU(4, 8, batch_first=True), nn.Linear(8, 2)

        def forward(self, x):
            out, _ = self.gru(x)
            return self.fc(out[:, -1])

    class LSTM(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm, self.fc = nn.LSTM(4, 8, num_layers=2, batch_first=True, bidirectional=True), nn.Linear(16, 2)

        def forward(self, x):
            out, _ = self.lstm(x)
            return self.fc(out[:, -1])

    class WhisperEncoder(nn.Module):
        """Two 1-d convolutions over mel frames, sinusoidal positions sliced to the length,
        pre-LN blocks with scaled_dot_product_attention."""
        def __init__(self, mels=8, d=32, heads=4, layers=2, max_len=32):
            super().__init__()
            self.conv1, self.conv2 = nn.Conv1d(mels, d, 3, padding=1), nn.Conv1d(d, d, 3, stride=2, padding=1)
            self.register_buffer("positions", torch.randn(max_len, d))
            self.attn = nn.ModuleList(SelfAttention(d, heads, sdpa=True) for _ in range(layers))
            self.ln1 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ff = nn.ModuleList(nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                    for _ in range(layers))
            self.ln2 = nn.ModuleList(nn.LayerNorm(d) for _ in range(layers))
            self.ln = nn.LayerNorm(d)

        def forward(self, mel):
            x = F.gelu(self.conv2(F.gelu(self.conv1(mel)))).permute(0, 2, 1)
            x = x + self.positions[: x.shape[1]]
            for attn, ln1, ff, ln2 in zip(self.attn, self.ln1, self.ff, self.ln2):
                x = x + attn(ln1(x))
                x = x + ff(ln2(x))
            return self.ln(x)

    class ConvNeXtBlock(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
            self.ln, self.up, self.down = nn.LayerNorm(c), nn.Linear(c, 4 * c), nn.Linear(4 * c, c)
            self.gamma = nn.Parameter(torch.full((c,), 0.1))

        def forward(self, x):
            h = self.dw(x).permute(0, 2, 3, 1)
            h = self.gamma * self.down(F.gelu(self.up(self.ln(h))))
            return x + h.permute(0, 3, 1, 2)

    class ConvNeXt(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 16, 4, 4)
            self.blocks = nn.Sequential(ConvNeXtBlock(16), ConvNeXtBlock(16))
            self.norm, self.head = nn.LayerNorm(16), nn.Linear(16, 10)

        def forward(self, x):
            return self.head(self.norm(self.blocks(self.stem(x)).mean((-2, -1))))

    class Swin(nn.Module):
        """Patches, a shifted-window attention block (roll, window partition by reshape and
        permute, a relative position bias gathered from a table) and patch merging."""
        def __init__(self, d=16, window=4, heads=2):
            super().__init__()
            self.d, self.window, self.heads = d, window, heads
            self.embed, self.ln1, self.ln2 = nn.Conv2d(3, d, 4, 4), nn.LayerNorm(d), nn.LayerNorm(4 * d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))
            coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
            rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + window - 1
            self.register_buffer("index", rel[..., 0] * (2 * window - 1) + rel[..., 1])
            self.merge = nn.Linear(4 * d, 2 * d)

        def forward(self, x):
            x = self.embed(x).permute(0, 2, 3, 1)                         # (1, 8, 8, d)
            n, w = 8 // self.window, self.window
            h = torch.roll(self.ln1(x), shifts=(-2, -2), dims=(1, 2))
            h = h.reshape(1, n, w, n, w, self.d).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, self.d)
            q, k, v = self.qkv(h).reshape(-1, w * w, 3, self.heads, self.d // self.heads).permute(2, 0, 3, 1, 4)
            bias = self.table[self.index.reshape(-1)].reshape(w * w, w * w, -1).permute(2, 0, 1)
            a = torch.softmax(q @ k.transpose(-2, -1) * 0.5 + bias, dim=-1) @ v
            a = self.proj(a.transpose(1, 2).reshape(-1, w * w, self.d))
            a = a.reshape(1, n, n, w, w, self.d).permute(0, 1, 3, 2, 4, 5).reshape(1, 8, 8, self.d)
            x = x + torch.roll(a, shifts=(2, 2), dims=(1, 2))
            x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
            return self.merge(self.ln2(x))

    class DETR(nn.Module):
        """A conv backbone whose feature map, flattened, is the memory that object queries
        (expanded to the batch) attend to, then box and class heads."""
        def __init__(self, d=16, queries=5, heads=2):
            super().__init__()
            self.heads = heads
            self.backbone = nn.Sequential(nn.Conv2d(3, d, 3, 2, 1), nn.ReLU(), nn.Conv2d(d, d, 3, 2, 1))
            self.queries = nn.Parameter(torch.randn(1, queries, d))
            self.self_attn = SelfAttention(d, heads, sdpa=True)
            self.q, self.kv, self.o = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
            self.ln1, self.ln2, self.ln3 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))
            self.boxes, self.classes = nn.Linear(d, 4), nn.Linear(d, 3)

        def forward(self, x):
            memory = self.backbone(x).flatten(2).transpose(1, 2)
            b = memory.shape[0]
            h = self.queries.expand(b, -1, -1)
            h = self.ln1(h + self.self_attn(h))
            q = self.q(h).view(b, -1, self.heads, 8).transpose(1, 2)
            k, v = self.kv(memory).view(b, -1, 2 * self.heads, 8).transpose(1, 2).chunk(2, dim=1)
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, -1, 16)
            h = self.ln2(h + self.o(a))
            h = self.ln3(h + self.ff(h))
            return self.boxes(h).sigmoid(), self.classes(h)

    class EfficientNet(nn.Module):
        """MBConv blocks: SiLU, depthwise convolution, squeeze-and-excitation by sigmoid."""
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.SiLU())
            self.dw = nn.Sequential(nn.Conv2d(8, 8, 5, 2, 2, groups=8, bias=False), nn.BatchNorm2d(8), nn.SiLU())
            self.se1, self.se2 = nn.Conv2d(8, 2, 1), nn.Conv2d(2, 8, 1)
            self.project = nn.Sequential(nn.Conv2d(8, 16, 1, bias=False), nn.BatchNorm2d(16))
            self.head = nn.Linear(16, 10)

        def forward(self, x):
            h = self.dw(self.stem(x))
            h = h * torch.sigmoid(self.se2(F.silu(self.se1(F.adaptive_avg_pool2d(h, 1)))))
            return self.head(torch.flatten(F.adaptive_avg_pool2d(self.project(h), 1), 1))

    return torch, {"bert": Bert, "gpt2": GPT2, "gpt2_built_mask": GPT2BuiltMask, "llama": Llama, "resnet": ResNet,
                   "mobilenet": MobileNet, "vit": ViT, "unet": UNet, "gru": GRU, "lstm": LSTM,
                   "whisper": WhisperEncoder, "convnext": ConvNeXt, "swin": Swin, "detr": DETR,
                   "efficientnet": EfficientNet}


def convert(name, example_inputs, inputs, outputs, target, states=(), precision=None):
    """Torch module `name`, seeded, traced with `example_inputs` and converted."""
    import coremltools as ct
    torch, modules = nets()
    torch.manual_seed(0)
    model = modules[name]().eval()
    with torch.no_grad():
        traced = torch.jit.trace(model, example_inputs, check_trace=False)
    return ct.convert(traced, inputs=inputs, outputs=outputs, states=list(states),
                      minimum_deployment_target=target, compute_precision=precision or ct.precision.FLOAT16,
                      skip_model_load=True)


def exported(name, example_inputs, dynamic_shapes, target):
    """Torch module `name`, seeded, exported by torch.export (coremltools' other torch frontend,
    with the shape arithmetic spelled its own way) and converted."""
    import coremltools as ct
    torch, modules = nets()
    torch.manual_seed(0)
    model = modules[name]().eval()
    program = torch.export.export(model, example_inputs, dynamic_shapes=dynamic_shapes).run_decompositions({})
    return ct.convert(program, minimum_deployment_target=target, skip_model_load=True)


def gpt2_exported():
    import coremltools as ct
    import torch
    length = torch.export.Dim("length", min=2, max=15)
    return exported("gpt2", (torch.randint(0, 64, (1, 8)),), {"ids": {1: length}}, ct.target.iOS18)


def vit_exported():
    import coremltools as ct
    import torch
    return exported("vit", (torch.rand(2, 3, 32, 32),), None, ct.target.iOS17)


def ids_input(name, shape):
    import coremltools as ct
    return ct.TensorType(name=name, shape=shape, dtype=np.int32)


# Transformers read their input's batch and length at run time, so their inputs have flexible
# dims (coremltools folds a fixed dim read at run time to a constant, and with numpy 2 fails).

def bert(fp32=False):
    import coremltools as ct
    import torch
    return convert("bert", torch.randint(0, 64, (1, 8)), [ids_input("ids", (ct.RangeDim(1, 2, default=1), ct.RangeDim(1, 16, default=8)))],
                   [ct.TensorType(name="hidden"), ct.TensorType(name="pooled")],
                   ct.target.iOS17 if fp32 else ct.target.iOS16,
                   precision=ct.precision.FLOAT32 if fp32 else None)


def gpt2(target=None):
    import coremltools as ct
    import torch
    return convert("gpt2", torch.randint(0, 64, (1, 8)), [ids_input("ids", (ct.RangeDim(1, 2, default=1), ct.RangeDim(1, 16, default=8)))],
                   [ct.TensorType(name="logits")], target or ct.target.iOS17)


def gpt2_built_mask():
    import coremltools as ct
    import torch
    return convert("gpt2_built_mask", torch.randint(0, 64, (1, 8)),
                   [ids_input("ids", (ct.RangeDim(1, 2, default=1), ct.RangeDim(1, 16, default=8)))],
                   [ct.TensorType(name="logits")], ct.target.iOS17)


def bert_enumerated():
    import coremltools as ct
    import torch
    shapes = ct.EnumeratedShapes(shapes=[(1, 8), (2, 16)], default=(1, 8))
    return convert("bert", torch.randint(0, 64, (1, 8)), [ids_input("ids", shapes)],
                   [ct.TensorType(name="hidden"), ct.TensorType(name="pooled")], ct.target.iOS17)


def llama():
    import coremltools as ct
    import torch
    query = ct.RangeDim(1, 16, default=1)
    end = ct.RangeDim(1, 16, default=1)
    cache = (2, 1, 2, 16, 8)
    states = [ct.StateType(wrapped_type=ct.TensorType(shape=cache, dtype=np.float16), name=n)
              for n in ("key_cache", "value_cache")]
    return convert("llama", (torch.randint(0, 64, (1, 2)), torch.zeros(1, 1, 2, 5)),
                   [ids_input("ids", (1, query)),
                    ct.TensorType(name="causal_mask", shape=(1, 1, query, end), dtype=np.float16)],
                   [ct.TensorType(name="logits", dtype=np.float16)], ct.target.iOS18, states)


def llama_multifunction():
    """The stateful Llama twice, as a prompt function (up to 16 tokens) and a decode
    function, in one multifunction model sharing weights (coremltools' save_multifunction)."""
    import coremltools as ct
    import torch
    cache = (2, 1, 2, 16, 8)

    def variant(query):
        states = [ct.StateType(wrapped_type=ct.TensorType(shape=cache, dtype=np.float16), name=n)
                  for n in ("key_cache", "value_cache")]
        end = ct.RangeDim(1, 16, default=1)
        return convert("llama", (torch.randint(0, 64, (1, 2)), torch.zeros(1, 1, 2, 5)),
                       [ids_input("ids", (1, query)),
                        ct.TensorType(name="causal_mask", shape=(1, 1, query, end), dtype=np.float16)],
                       [ct.TensorType(name="logits", dtype=np.float16)], ct.target.iOS18, states)
    with tempfile.TemporaryDirectory(prefix="miltext-conversions-") as tmp:
        prompt, decode, both = (os.path.join(tmp, n + ".mlpackage") for n in ("prompt", "decode", "both"))
        variant(ct.RangeDim(1, 16, default=4)).save(prompt)
        variant(ct.RangeDim(1, 2, default=1)).save(decode)   # a fixed length would be folded away
        descriptor = ct.utils.MultiFunctionDescriptor()
        descriptor.add_function(prompt, src_function_name="main", target_function_name="prompt")
        descriptor.add_function(decode, src_function_name="main", target_function_name="decode")
        descriptor.default_function_name = "prompt"
        ct.utils.save_multifunction(descriptor, both)
        model = ct.models.MLModel(both, skip_model_load=True)
        spec = model.get_spec()
        with open(os.path.join(model.weights_dir, "weight.bin"), "rb") as f:
            weights = f.read()
    return _Saved(spec, weights)


class _Saved:
    """A saved model's spec and weight file, outliving the folder it was read from."""
    def __init__(self, spec, weights):
        self.spec, self.weights = spec, weights

    def get_spec(self):
        return self.spec


def image_model(name, shape=(1, 3, 32, 32), target=None):
    """An image model; `target` a coremltools target or an iOS version number."""
    import coremltools as ct
    import torch
    if isinstance(target, int):
        target = getattr(ct.target, f"iOS{target}")
    return convert(name, torch.rand(1, 3, 32, 32), [ct.TensorType(name="image", shape=shape)],
                   [ct.TensorType(name="out")], target or ct.target.iOS17)


def whisper():
    import coremltools as ct
    import torch
    return convert("whisper", torch.rand(1, 8, 20), [ct.TensorType(name="mel", shape=(1, 8, ct.RangeDim(2, 60, default=20)))],
                   [ct.TensorType(name="features")], ct.target.iOS18)


def lstm():
    import coremltools as ct
    import torch
    return convert("lstm", torch.rand(1, 5, 4), [ct.TensorType(name="x", shape=(1, 5, 4))],
                   [ct.TensorType(name="y")], ct.target.iOS15, precision=ct.precision.FLOAT32)


def detr():
    import coremltools as ct
    import torch
    return convert("detr", torch.rand(1, 3, 32, 32),
                   [ct.TensorType(name="image", shape=(ct.RangeDim(1, 4, default=1), 3, 32, 32))],
                   [ct.TensorType(name="boxes"), ct.TensorType(name="logits")], ct.target.iOS18)


def flexible_cnn():
    import coremltools as ct
    size = ct.RangeDim(16, 64, default=32)
    return image_model("efficientnet", (1, 3, size, size), ct.target.iOS16)


def gru():
    import coremltools as ct
    import torch
    return convert("gru", torch.rand(1, 5, 4), [ct.TensorType(name="x", shape=(1, 5, 4))],
                   [ct.TensorType(name="y")], ct.target.iOS16)


def compressed(kind):
    """gpt2 for iOS18, its weights compressed by coremltools.optimize."""
    import coremltools as ct
    import coremltools.optimize.coreml as cto
    model = gpt2(ct.target.iOS18)
    if kind == "int8":
        config = cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int8", granularity="per_channel",
                                             weight_threshold=0)
        return cto.linear_quantize_weights(model, cto.OptimizationConfig(global_config=config))
    if kind == "int4":
        config = cto.OpLinearQuantizerConfig(mode="linear_symmetric", dtype="int4", granularity="per_block",
                                             block_size=16, weight_threshold=0)
        return cto.linear_quantize_weights(model, cto.OptimizationConfig(global_config=config))
    if kind == "palettized":
        config = cto.OpPalettizerConfig(mode="uniform", nbits=4, granularity="per_grouped_channel",
                                        group_size=16, weight_threshold=0)
        return cto.palettize_weights(model, cto.OptimizationConfig(global_config=config))
    if kind == "palettized_scaled":     # a palette per group, scaled per channel
        config = cto.OpPalettizerConfig(mode="uniform", nbits=4, granularity="per_grouped_channel",
                                        group_size=16, enable_per_channel_scale=True, weight_threshold=0)
        return cto.palettize_weights(model, cto.OptimizationConfig(global_config=config))
    config = cto.OpMagnitudePrunerConfig(target_sparsity=0.5, weight_threshold=0)
    model = cto.prune_weights(model, cto.OptimizationConfig(global_config=config))
    if kind == "pruned_palettized":      # the nonzero weights palettized (joint compression)
        config = cto.OpPalettizerConfig(mode="uniform", nbits=2, weight_threshold=0)
        return cto.palettize_weights(model, cto.OptimizationConfig(global_config=config), joint_compression=True)
    return model


def resnet_int8_ios16():
    """iOS16's compressed weights (constexpr_affine_dequantize) on convolutions."""
    import coremltools as ct
    import coremltools.optimize.coreml as cto
    model = image_model("resnet", target=ct.target.iOS16)
    config = cto.OpLinearQuantizerConfig(mode="linear", dtype="int8", weight_threshold=0)
    return cto.linear_quantize_weights(model, cto.OptimizationConfig(global_config=config))


def enumerated_resnet():
    import coremltools as ct
    return image_model("resnet", ct.EnumeratedShapes(shapes=[(1, 3, 32, 32), (1, 3, 64, 64)],
                                                      default=(1, 3, 32, 32)))


def flexible_vit():
    import coremltools as ct
    return image_model("vit", (ct.RangeDim(1, 4, default=1), 3, 32, 32), ct.target.iOS18)


MAKERS = {
    "bert": bert,
    "bert_fp32": lambda: bert(fp32=True),
    "bert_enumerated": bert_enumerated,
    "gpt2_built_mask": gpt2_built_mask,
    "gpt2": gpt2,
    "llama_kv_cache": llama,
    "llama_multifunction": llama_multifunction,
    "gpt2_exported": gpt2_exported,
    "vit_exported": vit_exported,
    "resnet": lambda: image_model("resnet"),
    "resnet_enumerated": enumerated_resnet,
    "mobilenet": lambda: image_model("mobilenet"),
    "vit_flexible_batch": flexible_vit,
    "unet": lambda: image_model("unet"),
    "gru": gru,
    "lstm": lstm,
    "whisper_encoder": whisper,
    "convnext": lambda: image_model("convnext"),
    "swin": lambda: image_model("swin", target=18),
    "detr": detr,
    "efficientnet_flexible": flexible_cnn,
    "gpt2_int8": lambda: compressed("int8"),
    "gpt2_int4_blockwise": lambda: compressed("int4"),
    "gpt2_palettized": lambda: compressed("palettized"),
    "gpt2_pruned": lambda: compressed("pruned"),
    "gpt2_palettized_scaled": lambda: compressed("palettized_scaled"),
    "gpt2_pruned_palettized": lambda: compressed("pruned_palettized"),
    "resnet_int8_ios16": resnet_int8_ios16,
}


def write(name: str, model) -> list:
    """NAME.pb and, when the program has blob weights, NAME.weight.bin; the paths written."""
    spec = model.get_spec()
    pb = os.path.join(OUT, name + ".pb")
    with open(pb, "wb") as f:
        f.write(spec.mlProgram.SerializeToString(deterministic=True))
    written = [pb]
    target = os.path.join(OUT, name + ".weight.bin")
    if isinstance(model, _Saved):
        weights = model.weights
    else:
        path = os.path.join(model.weights_dir, "weight.bin") if model.weights_dir else None
        weights = open(path, "rb").read() if path and os.path.exists(path) else None
    if weights is not None and b"@model_path/weights/weight.bin" in open(pb, "rb").read():
        with open(target, "wb") as f:
            f.write(weights)
        written.append(target)
    elif os.path.exists(target):
        os.remove(target)
    return written


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", metavar="NAME", help=f"the conversions to make: {', '.join(MAKERS)}")
    args = ap.parse_args(argv)
    unknown = sorted(set(args.names) - set(MAKERS))
    if unknown:
        ap.error(f"no conversion {', '.join(unknown)}")
    os.makedirs(OUT, exist_ok=True)
    from coremltools.converters.mil import Builder
    for name in args.names or MAKERS:
        Builder.name_count.clear()   # op names count per process: each conversion counts from 0
        for path in write(name, MAKERS[name]()):
            print(os.path.relpath(path, ROOT), os.path.getsize(path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
