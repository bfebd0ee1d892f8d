#!/usr/bin/python3
"""Exports the generated test models of ptqkit (random weights, fixed seed) and their sample inputs.

Usage: export_models.py MODEL OUTDIR      MODEL in: resnet18, mobilenet_v2, transformer

Writes OUTDIR/<MODEL>.onnx and OUTDIR/<MODEL>.samples.npy (8 float32 samples, batch first); for
resnet18 also OUTDIR/resnet18.calib.npy (32 samples). Every file is written to a temporary name
and renamed, so an interrupted run leaves no truncated file behind.

The weights are random (weights=None) but the BatchNorm running statistics are set by running a
few random batches in train mode, so activations keep a realistic scale through the depth of the
network instead of exploding or vanishing. Everything is seeded and single-threaded, so a second
run writes the same bytes.
"""
import inspect
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torchvision

SEED = 20240601
NUM_SAMPLES = 8
NUM_CALIB = 32


def atomic_save_npy(path, array):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


def atomic_export(model, example, path, opset, input_shape_names):
    tmp = path + ".tmp"
    # Newer torch (2.9+) defaults to the dynamo exporter; keep the TorchScript one everywhere.
    legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
    torch.onnx.export(
        model, example, tmp, **legacy,
        input_names=["input"], output_names=["output"],
        dynamic_axes={"input": input_shape_names, "output": {0: "batch"}},
        opset_version=opset, do_constant_folding=True,
        training=torch.onnx.TrainingMode.EVAL)
    proto = onnx.load(tmp)
    onnx.checker.check_model(proto)
    os.replace(tmp, path)


def set_bn_statistics(model, make_batch, batches):
    """Sets every BatchNorm's running mean/var to the cumulative average over random batches."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None  # cumulative moving average: every batch counts the same
    model.train()
    with torch.no_grad():
        for _ in range(batches):
            model(make_batch())
    model.eval()


def image_samples(rng, count):
    """Image-like inputs in the normalised range of ImageNet models: smooth blobs plus noise."""
    base = rng.standard_normal((count, 3, 28, 28)).astype(np.float32)
    up = torch.nn.functional.interpolate(torch.from_numpy(base), size=(224, 224),
                                         mode="bilinear", align_corners=False).numpy()
    noise = 0.25 * rng.standard_normal((count, 3, 224, 224)).astype(np.float32)
    return (up + noise).astype(np.float32)


def export_cnn(name, outdir):
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    model = getattr(torchvision.models, name)(weights=None)
    set_bn_statistics(model, lambda: torch.from_numpy(image_samples(rng, 8)), batches=3)
    atomic_export(model, torch.from_numpy(image_samples(rng, 1)),
                  os.path.join(outdir, name + ".onnx"), 13, {0: "batch"})
    sample_rng = np.random.default_rng(SEED + 1)
    atomic_save_npy(os.path.join(outdir, name + ".samples.npy"),
                    image_samples(sample_rng, NUM_SAMPLES))
    if name == "resnet18":
        calib_rng = np.random.default_rng(SEED + 2)
        atomic_save_npy(os.path.join(outdir, name + ".calib.npy"),
                        image_samples(calib_rng, NUM_CALIB))


class SelfAttention(nn.Module):
    """Multi-head self-attention written out, so the graph holds MatMul and Softmax nodes."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x):
        n, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.reshape(n, s, h, d // h).transpose(1, 2)
        k = k.reshape(n, s, h, d // h).transpose(1, 2)
        v = v.reshape(n, s, h, d // h).transpose(1, 2)
        att = torch.softmax(torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d // h), dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).reshape(n, s, d)
        return self.proj(y)


class EncoderLayer(nn.Module):
    """Pre-norm transformer encoder layer: LayerNorm, attention, LayerNorm, GELU feed-forward."""

    def __init__(self, d, heads, ffn):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.attn = SelfAttention(d, heads)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, ffn), nn.GELU(), nn.Linear(ffn, d))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ffn(self.norm2(x))


class TinyTransformer(nn.Module):
    def __init__(self, d=64, heads=4, ffn=128, layers=2, classes=10):
        super().__init__()
        self.layers = nn.Sequential(*[EncoderLayer(d, heads, ffn) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        return self.head(self.norm(self.layers(x)).mean(dim=1))


def export_transformer(outdir):
    torch.manual_seed(SEED)
    model = TinyTransformer().eval()
    rng = np.random.default_rng(SEED)
    example = torch.from_numpy(rng.standard_normal((1, 16, 64)).astype(np.float32))
    # opset 17: LayerNormalization is a single op; GELU stays Erf-based (Gelu is opset 20).
    atomic_export(model, example, os.path.join(outdir, "transformer.onnx"), 17, {0: "batch"})
    sample_rng = np.random.default_rng(SEED + 1)
    atomic_save_npy(os.path.join(outdir, "transformer.samples.npy"),
                    sample_rng.standard_normal((NUM_SAMPLES, 16, 64)).astype(np.float32))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("resnet18", "mobilenet_v2", "transformer"):
        sys.exit("usage: export_models.py resnet18|mobilenet_v2|transformer OUTDIR")
    name, outdir = sys.argv[1], sys.argv[2]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    if name == "transformer":
        export_transformer(outdir)
    else:
        export_cnn(name, outdir)


if __name__ == "__main__":
    main()
