#!/usr/bin/python3
"""Exports ptqkit's model zoo: public architectures with random weights (fixed seed) and seeded
sample inputs, the yardstick every speed and accuracy claim is measured on.

Usage: export_zoo.py OUTDIR [MODEL ...]     (no MODEL: every model; --list prints the names)

For each model NAME it writes
  OUTDIR/NAME.onnx                     dynamic batch (axis 0 of every input and output)
  OUTDIR/NAME/calib/<input>.npy        16 calibration samples per input, stacked on axis 0
  OUTDIR/NAME/test/<input>.npy         8 held-out samples per input
  OUTDIR/NAME.json                     the model's manifest entry (family, opset, batch, inputs)
and OUTDIR/manifest.json lists every model written so far. Every file goes to a temporary name
and is renamed, so an interrupted run leaves no truncated file. BatchNorm running statistics are
set as scripts/export_models.py sets them, so activations keep a realistic scale.
"""
import inspect
import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import SEED, atomic_save_npy, set_bn_statistics  # noqa: E402

NUM_CALIB = 16
NUM_TEST = 8


def smooth_images(rng, count, channels, size):
    """Image-like inputs in a normalised range: smooth blobs plus noise."""
    h, w = size
    base = rng.standard_normal((count, channels, max(h // 8, 1), max(w // 8, 1)))
    up = F.interpolate(torch.from_numpy(base.astype(np.float32)), size=(h, w), mode="bilinear",
                       align_corners=False).numpy()
    return (up + 0.25 * rng.standard_normal((count, channels, h, w))).astype(np.float32)


def features(rng, count, shape):
    """Spectrogram-like inputs: a smooth envelope over time plus noise."""
    base = rng.standard_normal((count,) + tuple(shape)).astype(np.float32)
    envelope = np.cumsum(rng.standard_normal((count, 1, shape[-1])), axis=-1) / math.sqrt(shape[-1])
    return (0.5 * base + envelope).astype(np.float32)


def tokens(rng, count, seq, vocab):
    """Token ids and a padding mask: each sample keeps between half and all of its positions."""
    ids = rng.integers(1, vocab, size=(count, seq), dtype=np.int64)
    lengths = rng.integers(seq // 2, seq + 1, size=count)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype(np.int64)
    return {"input_ids": ids * mask, "attention_mask": mask}


# ---- models written in plain torch -------------------------------------------------------

class ResNet20(nn.Module):
    """CIFAR ResNet-20 (He et al. 2016): 3 stages of 3 basic blocks, 16/32/64 channels."""

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.short = nn.Sequential()
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                           nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            return F.relu(self.b2(self.c2(y)) + self.short(x))

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU())
        blocks, cin = [], 16
        for cout, stride in ((16, 1), (32, 2), (64, 2)):
            for i in range(3):
                blocks.append(self.Block(cin, cout, stride if i == 0 else 1))
                cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


class SmallCnn(nn.Module):
    """A 28x28 classifier with 16-128 channels (Fashion-MNIST size)."""

    def __init__(self, classes=10):
        super().__init__()

        def conv(cin, cout):
            return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout),
                                 nn.ReLU())
        self.features = nn.Sequential(conv(1, 16), conv(16, 32), nn.MaxPool2d(2), conv(32, 64),
                                      conv(64, 64), nn.MaxPool2d(2), conv(64, 128),
                                      conv(128, 128))
        self.fc = nn.Sequential(nn.Flatten(), nn.Linear(128 * 7 * 7, 256), nn.ReLU(),
                                nn.Linear(256, classes))

    def forward(self, x):
        return self.fc(self.features(x))


class KeywordSpotter(nn.Module):
    """A 1-D convolutional keyword spotter over 40 MFCCs x 98 frames (TC-ResNet-like)."""

    def __init__(self, mfcc=40, classes=12):
        super().__init__()
        layers, cin = [], mfcc
        for cout, dilation in ((64, 1), (64, 2), (96, 4), (96, 8), (128, 1)):
            layers += [nn.Conv1d(cin, cout, 3, padding=dilation, dilation=dilation, bias=False),
                       nn.BatchNorm1d(cout), nn.ReLU()]
            cin = cout
        self.body = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        return self.fc(self.body(x).mean(dim=-1))


class Attention(nn.Module):
    """Multi-head attention written out (MatMul, Softmax), with an optional additive mask."""

    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)

    def forward(self, x, mask=None):
        n, s, d = x.shape
        h = self.heads
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(n, s, h, d // h).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(d // h)
        if mask is not None:
            scores = scores + mask
        y = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(n, s, d)
        return self.proj(y)


class Block(nn.Module):
    """A transformer block: post-norm (BERT) or pre-norm (GPT, Whisper)."""

    def __init__(self, d, heads, ffn, pre_norm, gelu="none"):
        super().__init__()
        self.pre_norm = pre_norm
        self.attn = Attention(d, heads)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, ffn), nn.GELU(approximate=gelu), nn.Linear(ffn, d))

    def forward(self, x, mask=None):
        if self.pre_norm:
            x = x + self.attn(self.norm1(x), mask)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.ffn(x))


class BertEncoder(nn.Module):
    """BERT-style: token + position + segment embeddings, additive padding mask, post-norm."""

    def __init__(self, vocab=8000, d=256, heads=4, ffn=1024, layers=4, max_len=512, classes=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.norm = nn.LayerNorm(d)
        self.blocks = nn.ModuleList([Block(d, heads, ffn, False) for _ in range(layers)])
        self.pool = nn.Linear(d, d)
        self.head = nn.Linear(d, classes)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.norm(self.tok(input_ids) + self.pos(positions))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for block in self.blocks:
            x = block(x, mask)
        return x, self.head(torch.tanh(self.pool(x[:, 0])))


class GptDecoder(nn.Module):
    """GPT-style: learned positions, causal mask, pre-norm blocks with tanh GELU, tied head."""

    def __init__(self, vocab=8000, d=256, heads=4, ffn=1024, layers=4, max_len=256):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(max_len, d)
        self.blocks = nn.ModuleList([Block(d, heads, ffn, True, "tanh") for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        causal = torch.triu(torch.full((max_len, max_len), float("-inf")), diagonal=1)
        self.register_buffer("causal", causal)

    def forward(self, input_ids):
        seq = input_ids.shape[1]
        positions = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.tok(input_ids) + self.pos(positions)
        mask = self.causal[:seq, :seq]
        for block in self.blocks:
            x = block(x, mask)
        return torch.matmul(self.norm(x), self.tok.weight.t())


class WhisperEncoder(nn.Module):
    """Whisper-style audio encoder: two Conv1d (the second stride 2) with GELU, sinusoidal
    positions, pre-norm transformer blocks, a final LayerNorm (whisper-tiny's sizes)."""

    def __init__(self, mels=80, d=384, heads=6, ffn=1536, layers=4, frames=3000):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, d, 3, padding=1)
        self.conv2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        self.blocks = nn.ModuleList([Block(d, heads, ffn, True) for _ in range(layers)])
        self.norm = nn.LayerNorm(d)
        positions = torch.arange(frames // 2).float()[:, None]
        scales = torch.exp(-math.log(10000) * torch.arange(d // 2).float() / (d // 2 - 1))
        self.register_buffer("positions", torch.cat([torch.sin(positions * scales),
                                                     torch.cos(positions * scales)], dim=1))

    def forward(self, x):
        x = F.gelu(self.conv2(F.gelu(self.conv1(x)))).transpose(1, 2)
        x = x + self.positions
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


class LstmTagger(nn.Module):
    """A two-layer bidirectional LSTM tagging every frame of a feature sequence (speech, OCR)."""

    def __init__(self, feats=20, hidden=32, classes=10):
        super().__init__()
        self.lstm = nn.LSTM(feats, hidden, num_layers=2, bidirectional=True, batch_first=True)
        self.fc = nn.Linear(2 * hidden, classes)

    def forward(self, x):
        return self.fc(self.lstm(x)[0])


class GruClassifier(nn.Module):
    """A GRU over a feature sequence, classified from its last state (keyword spotting)."""

    def __init__(self, feats=20, hidden=48, classes=12):
        super().__init__()
        self.proj = nn.Linear(feats, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, classes)

    def forward(self, x):
        return self.fc(self.gru(torch.relu(self.proj(x)))[1][0])


class RaftSmall(nn.Module):
    """torchvision's raft_small optical flow (its correlation lookups are GridSample) returning
    the last flow estimate, with 2 refinement updates instead of 12: each update repeats the
    same ops, so two keep the graph and CI small. torchvision 0.14 divides the correlation by
    torch.sqrt(torch.tensor(channels)), which exports as Sqrt of an int64 (an invalid model);
    the same division by a Python float exports as a constant."""

    def __init__(self):
        super().__init__()
        self.raft = torchvision.models.optical_flow.raft_small(weights=None)

        def corr_volume(fmap1, fmap2):
            n, c, h, w = fmap1.shape
            corr = torch.matmul(fmap1.view(n, c, h * w).transpose(1, 2), fmap2.view(n, c, h * w))
            return corr.view(n, h, w, 1, h, w) / math.sqrt(c)
        self.raft.corr_block._compute_corr_volume = corr_volume

    def forward(self, image1, image2):
        return self.raft(image1, image2, num_flow_updates=2)[-1]


# ---- the zoo -----------------------------------------------------------------------------
# name: (family, opset, natural batch, builder, {input: (kind, shape)}, output names)
# kind "image": float32 NCHW; "features": float32 spectrogram-like (or [seq, feats]);
# "tokens": int64 ids + mask.

def torchvision_model(name, **kwargs):
    return lambda: getattr(torchvision.models, name)(weights=None, **kwargs)


def lraspp():
    return torchvision.models.segmentation.lraspp_mobilenet_v3_large(
        weights=None, weights_backbone=None)


IMAGE = {"input": ("image", (3, 224, 224))}
ZOO = {
    "resnet50": ("cnn", 13, 32, torchvision_model("resnet50"), IMAGE, ["logits"]),
    "mobilenet_v3_large": ("cnn", 11, 32, torchvision_model("mobilenet_v3_large"), IMAGE,
                           ["logits"]),
    "efficientnet_b0": ("cnn", 13, 32, torchvision_model("efficientnet_b0"), IMAGE, ["logits"]),
    "regnet_y_400mf": ("cnn", 13, 32, torchvision_model("regnet_y_400mf"), IMAGE, ["logits"]),
    "convnext_tiny": ("cnn", 17, 32, torchvision_model("convnext_tiny"), IMAGE, ["logits"]),
    "shufflenet_v2": ("cnn", 11, 32, torchvision_model("shufflenet_v2_x1_0"), IMAGE, ["logits"]),
    "squeezenet": ("cnn", 11, 32, torchvision_model("squeezenet1_1"), IMAGE, ["logits"]),
    "googlenet": ("cnn", 13, 32, torchvision_model("googlenet", aux_logits=False,
                                                   init_weights=True), IMAGE, ["logits"]),
    "resnet20_cifar": ("cnn", 13, 32, ResNet20, {"input": ("image", (3, 32, 32))}, ["logits"]),
    "cnn28": ("cnn", 11, 32, SmallCnn, {"input": ("image", (1, 28, 28))}, ["logits"]),
    "lraspp_mobilenet_v3": ("dense", 13, 8, lraspp, {"input": ("image", (3, 224, 224))},
                            ["out"]),
    "vit_b_16": ("transformer", 13, 8, torchvision_model("vit_b_16"), IMAGE, ["logits"]),
    "swin_t": ("transformer", 17, 8, torchvision_model("swin_t"), IMAGE, ["logits"]),
    "bert_opset17": ("transformer", 17, 8, BertEncoder,
                     {"input_ids": ("tokens", (128,)), "attention_mask": ("mask", (128,))},
                     ["hidden", "logits"]),
    "bert_opset13": ("transformer", 13, 8, BertEncoder,
                     {"input_ids": ("tokens", (128,)), "attention_mask": ("mask", (128,))},
                     ["hidden", "logits"]),
    "gpt_decoder": ("transformer", 13, 8, GptDecoder, {"input_ids": ("tokens", (64,))},
                    ["logits"]),
    "whisper_encoder": ("transformer", 17, 8, WhisperEncoder,
                        {"input": ("features", (80, 3000))}, ["hidden"]),
    "kws_conv1d": ("audio", 11, 32, KeywordSpotter, {"input": ("features", (40, 98))},
                   ["logits"]),
    "lstm_tagger": ("sequence", 14, 8, LstmTagger, {"input": ("features", (16, 20))},
                    ["logits"]),
    "gru_classifier": ("sequence", 14, 8, GruClassifier, {"input": ("features", (16, 20))},
                       ["logits"]),
    "raft_small": ("flow", 16, 8, RaftSmall,
                   {"image1": ("image", (3, 64, 64)), "image2": ("image", (3, 64, 64))}, ["flow"]),
}


def make_inputs(rng, inputs, count):
    """Seeded samples for every input, stacked on axis 0."""
    out = {}
    for name, (kind, shape) in inputs.items():
        if kind == "image":
            out[name] = smooth_images(rng, count, shape[0], shape[1:])
        elif kind == "features":
            out[name] = features(rng, count, shape)
        elif kind == "tokens":
            out.update({k: v for k, v in tokens(rng, count, shape[0], 8000).items()
                        if k == name or k in inputs})
        elif kind != "mask":
            raise ValueError(f"unknown input kind {kind}")
    return out


def reinit_zero_weights(model):
    """Gives weights that their architecture initialises to zero (ViT's classifier head) random
    values: a zero head makes every output zero, and zeros agree with anything."""
    with torch.no_grad():
        for m in model.modules():
            w = getattr(m, "weight", None)
            if isinstance(w, torch.Tensor) and w.dim() >= 2 and not w.any():
                nn.init.normal_(w, std=0.02)


def legacy_exporter():
    """Newer torch (2.9 on) exports through dynamo by default, which ignores dynamic_axes and
    writes other graphs; the zoo is defined by the TorchScript exporter that Debian's torch has."""
    params = inspect.signature(torch.onnx.export).parameters
    return {"dynamo": False} if "dynamo" in params else {}


def export(name, outdir):
    family, opset, batch, build, inputs, outputs = ZOO[name]
    torch.manual_seed(SEED)
    rng = np.random.default_rng(SEED)
    model = build()
    reinit_zero_weights(model)
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        first = next(iter(inputs))  # the models with BatchNorm here have one input
        set_bn_statistics(model, lambda: torch.from_numpy(make_inputs(rng, inputs, 8)[first]),
                          batches=3)
    model.eval()
    example = tuple(torch.from_numpy(v) for v in make_inputs(rng, inputs, 2).values())
    path = os.path.join(outdir, name + ".onnx")
    dynamic = {k: {0: "batch"} for k in list(inputs) + outputs}
    torch.onnx.export(model, example, path + ".tmp", input_names=list(inputs),
                      output_names=outputs, dynamic_axes=dynamic, opset_version=opset,
                      do_constant_folding=True, training=torch.onnx.TrainingMode.EVAL,
                      **legacy_exporter())
    os.replace(path + ".tmp", path)
    for split, count, seed in (("calib", NUM_CALIB, SEED + 1), ("test", NUM_TEST, SEED + 2)):
        folder = os.path.join(outdir, name, split)
        os.makedirs(folder, exist_ok=True)
        for input_name, array in make_inputs(np.random.default_rng(seed), inputs, count).items():
            atomic_save_npy(os.path.join(folder, input_name + ".npy"), array)
    entry = {"name": name, "family": family, "opset": opset, "batch": batch,
             "inputs": list(inputs), "outputs": outputs}
    write_json(os.path.join(outdir, name + ".json"), entry)


def write_json(path, value):
    with open(path + ".tmp", "w") as f:
        json.dump(value, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)


def write_manifest(outdir):
    entries = []
    for name in ZOO:
        path = os.path.join(outdir, name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                entries.append(json.load(f))
    write_json(os.path.join(outdir, "manifest.json"), {"models": entries})


def main():
    args = sys.argv[1:]
    if args == ["--list"]:
        print("\n".join(ZOO))
        return
    if not args or any(a not in ZOO for a in args[1:]):
        sys.exit("usage: export_zoo.py OUTDIR [MODEL ...] | --list   (MODEL in: "
                 + ", ".join(ZOO) + ")")
    outdir = args[0]
    os.makedirs(outdir, exist_ok=True)
    torch.set_num_threads(1)
    for name in args[1:] or ZOO:
        export(name, outdir)
    write_manifest(outdir)


if __name__ == "__main__":
    main()
