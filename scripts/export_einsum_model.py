#!/usr/bin/python3
"""Exports a small attention model written with torch.einsum (random weights, fixed seed): the
test model for the Einsum kernel, its GEMM path and quantization around it.

Usage: export_einsum_model.py OUTDIR

Writes OUTDIR/einsum_attention.onnx (opset 17, dynamic batch) and
OUTDIR/einsum_attention.samples.npy (8 float32 samples [16, 32], batch first). The graph holds
Einsum nodes of three kinds: attention scores "bhid,bhjd->bhij" and the weighted sum
"bhij,bhjd->bhid" (two activations each), and a feed-forward "btd,df->btf" with a constant
weight. Files go to temporary names and are renamed (scripts/export_models.py).
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import NUM_SAMPLES, SEED, atomic_export, atomic_save_npy  # noqa: E402

SEQ, DIM, HEADS, FFN, CLASSES = 16, 32, 4, 64, 10


class EinsumAttention(nn.Module):
    """One pre-norm encoder layer whose products are torch.einsum calls, then a linear head."""

    def __init__(self):
        super().__init__()
        self.norm1 = nn.LayerNorm(DIM)
        self.qkv = nn.Linear(DIM, 3 * DIM)
        self.proj = nn.Linear(DIM, DIM)
        self.norm2 = nn.LayerNorm(DIM)
        self.w1 = nn.Parameter(torch.randn(DIM, FFN) / DIM ** 0.5)
        self.w2 = nn.Parameter(torch.randn(FFN, DIM) / FFN ** 0.5)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, x):
        n, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(n, s, 3, HEADS, d // HEADS).permute(2, 0, 3, 1, 4)
        scores = torch.einsum("bhid,bhjd->bhij", q, k) / (d // HEADS) ** 0.5
        y = torch.einsum("bhij,bhjd->bhid", scores.softmax(dim=-1), v)
        x = x + self.proj(y.transpose(1, 2).reshape(n, s, d))
        h = torch.relu(torch.einsum("btd,df->btf", self.norm2(x), self.w1))
        x = x + torch.einsum("btf,fd->btd", h, self.w2)
        return self.head(x.mean(dim=1))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: export_einsum_model.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(SEED)
    model = EinsumAttention().eval()
    rng = np.random.default_rng(SEED)
    example = torch.from_numpy(rng.standard_normal((1, SEQ, DIM)).astype(np.float32))
    atomic_export(model, example, os.path.join(outdir, "einsum_attention.onnx"), 17,
                  {0: "batch"})
    sample_rng = np.random.default_rng(SEED + 2)
    atomic_save_npy(os.path.join(outdir, "einsum_attention.samples.npy"),
                    sample_rng.standard_normal((NUM_SAMPLES, SEQ, DIM)).astype(np.float32))


if __name__ == "__main__":
    main()
