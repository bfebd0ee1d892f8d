#!/usr/bin/python3
"""Trains the bundled example of ptqkit: a small residual CNN on Fashion-MNIST.

Usage: examples/train_fashion_cnn.py [--epochs N] [--outdir DIR]

Reads the dataset from Debian's dataset-fashion-mnist package (/usr/share/datasets/fashion-mnist)
and writes, under DIR (default: the folder of this script):
  fashion_cnn.onnx          opset 13, input `input` [N,1,28,28] float32, output `logits` [N,10]
  data/calib.npy            the first 256 training images, float16 [256,1,28,28], normalised
  data/test.npy             the first 1000 test images, float16 [1000,1,28,28], normalised
  data/test_labels.npy      their labels, int64 [1000]
  fashion_cnn.metrics.json  the float model's accuracy (on data/test.npy and on all 10,000)

Normalisation: x = (pixel / 255 - MEAN) / STD with MEAN = 0.2860, STD = 0.3530.
Reproducible: seed SEED, one thread, deterministic algorithms, a seeded generator for shuffling
and augmentation; running it again on the same Debian packages writes the same bytes.
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

SEED = 1234
MEAN = 0.2860
STD = 0.3530
DATASET = "/usr/share/datasets/fashion-mnist"
NUM_CALIB = 256
NUM_TEST = 1000
BATCH = 128


def read_idx(path):
    """Reads an idx file (gzip'd): a big-endian header of dims, then uint8 data."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an idx file of uint8")
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_split(kind):
    images = read_idx(os.path.join(DATASET, f"{kind}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(DATASET, f"{kind}-labels-idx1-ubyte.gz"))
    x = ((images.astype(np.float32) / 255.0 - MEAN) / STD)[:, None, :, :]
    return np.ascontiguousarray(x, dtype=np.float32), labels.astype(np.int64)


def conv_bn(cin, cout, kernel=3):
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, padding=kernel // 2, bias=False),
                         nn.BatchNorm2d(cout))


class ResidualBlock(nn.Module):
    """conv-bn-relu, conv-bn, plus the input (through a 1x1 conv-bn when the width changes)."""

    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = conv_bn(cin, cout)
        self.conv2 = conv_bn(cout, cout)
        self.shortcut = conv_bn(cin, cout, kernel=1) if cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.conv2(F.relu(self.conv1(x))) + self.shortcut(x))


class FashionCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(1, 16), nn.ReLU())   # 16 x 28 x 28
        self.block1 = ResidualBlock(16, 16)                     # 16 x 28 x 28
        self.pool1 = nn.MaxPool2d(2)                            # 16 x 14 x 14
        self.block2 = ResidualBlock(16, 32)                     # 32 x 14 x 14
        self.pool2 = nn.MaxPool2d(2)                            # 32 x 7 x 7
        self.block3 = ResidualBlock(32, 64)                     # 64 x 7 x 7
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool1(self.block1(self.stem(x)))
        x = self.pool2(self.block2(x))
        x = self.gap(self.block3(x))
        return self.head(torch.flatten(x, 1))


def augment(x, gen):
    """Random horizontal flip and a random shift of up to 2 pixels (zero-padded), per sample."""
    n = x.shape[0]
    flip = torch.rand(n, generator=gen) < 0.5
    x = torch.where(flip[:, None, None, None], x.flip(3), x)
    background = -MEAN / STD  # a black pixel after normalisation
    padded = F.pad(x, (2, 2, 2, 2), value=background)
    dy = torch.randint(0, 5, (n,), generator=gen)
    dx = torch.randint(0, 5, (n,), generator=gen)
    rows = (torch.arange(28)[None, :] + dy[:, None])  # [n, 28]
    cols = (torch.arange(28)[None, :] + dx[:, None])
    idx = torch.arange(n)[:, None, None]
    return padded[idx, 0, rows[:, :, None], cols[:, None, :]][:, None]


def evaluate(model, x, y):
    model.eval()
    correct = 0
    with torch.no_grad():
        for i in range(0, len(x), 500):
            logits = model(torch.from_numpy(x[i:i + 500]))
            correct += int((logits.argmax(1).numpy() == y[i:i + 500]).sum())
    return correct / len(x)


def train(model, x, y, epochs, gen):
    steps = epochs * (len(x) // BATCH)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                          weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=steps,
                                                pct_start=0.25)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    for epoch in range(epochs):
        model.train()
        start, total_loss = time.time(), 0.0
        order = torch.randperm(len(x), generator=gen)
        for b in range(len(x) // BATCH):  # drop the last partial batch
            idx = order[b * BATCH:(b + 1) * BATCH]
            loss = F.cross_entropy(model(augment(xt[idx], gen)), yt[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            total_loss += float(loss)
        print(f"epoch {epoch + 1}/{epochs}: loss {total_loss / (len(x) // BATCH):.4f} "
              f"({time.time() - start:.0f} s)", flush=True)


def save_npy(path, array):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


def export(model, path):
    model.eval()
    tmp = path + ".tmp"
    torch.onnx.export(model, torch.zeros(1, 1, 28, 28), tmp,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                      opset_version=13, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.EVAL)
    onnx.checker.check_model(onnx.load(tmp))
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--train-limit", type=int, default=0,
                        help="train on only the first N images (for a quick check)")
    parser.add_argument("--outdir", default=os.path.dirname(os.path.abspath(__file__)))
    args = parser.parse_args()

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)

    x_all, y_all = load_split("train")
    x_test, y_test = load_split("t10k")
    limit = args.train_limit or len(x_all)
    x_train, y_train = x_all[:limit], y_all[:limit]

    model = FashionCNN()
    start = time.time()
    train(model, x_train, y_train, args.epochs, gen)
    print(f"training took {time.time() - start:.0f} s")

    os.makedirs(os.path.join(args.outdir, "data"), exist_ok=True)
    export(model, os.path.join(args.outdir, "fashion_cnn.onnx"))
    calib = x_all[:NUM_CALIB].astype(np.float16)
    test = x_test[:NUM_TEST].astype(np.float16)
    save_npy(os.path.join(args.outdir, "data", "calib.npy"), calib)
    save_npy(os.path.join(args.outdir, "data", "test.npy"), test)
    save_npy(os.path.join(args.outdir, "data", "test_labels.npy"), y_test[:NUM_TEST])

    # Accuracy on the float16 file as a runtime reads it (widened to float32), and on all 10,000.
    metrics = {
        "seed": SEED,
        "epochs": args.epochs,
        "train_images": int(len(x_train)),
        "mean": MEAN,
        "std": STD,
        "top1_test_npy_1000": evaluate(model, test.astype(np.float32), y_test[:NUM_TEST]),
        "top1_full_test_10000": evaluate(model, x_test, y_test),
    }
    with open(os.path.join(args.outdir, "fashion_cnn.metrics.json.tmp"), "w") as f:
        json.dump(metrics, f, indent=2)
        f.write("\n")
    os.replace(os.path.join(args.outdir, "fashion_cnn.metrics.json.tmp"),
               os.path.join(args.outdir, "fashion_cnn.metrics.json"))
    print(json.dumps(metrics))


if __name__ == "__main__":
    main()
