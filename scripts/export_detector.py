#!/usr/bin/python3
"""Exports a dynamic-shape detector for the data-of-many-shapes tests (random weights, fixed
seed): torchvision's ssdlite320_mobilenet_v3_large backbone with its head, without the anchor
decoding and NMS postprocessing, height and width dynamic.

Usage: export_detector.py OUTDIR

Writes OUTDIR/ssdlite_head.onnx (input "images" [batch, 3, height, width]; outputs
"bbox_regression" [batch, anchors, 4] and "cls_logits" [batch, anchors, 10]) and
OUTDIR/ssdlite_head.samples/, eight float32 samples [3, H, W] of four sizes between 160 and 256,
two per size, named so that sorting by name mixes the sizes.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import SEED, atomic_save_npy, set_bn_statistics  # noqa: E402
from export_zoo import legacy_exporter, smooth_images  # noqa: E402

SIZES = [(160, 160), (192, 256), (224, 160), (256, 224)]


class DetectorHead(nn.Module):
    """Backbone features into the SSDLite head: the raw box regressions and class logits."""

    def __init__(self, ssd):
        super().__init__()
        self.backbone = ssd.backbone
        self.head = ssd.head

    def forward(self, images):
        features = list(self.backbone(images).values())
        out = self.head(features)
        return out["bbox_regression"], out["cls_logits"]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: export_detector.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    rng = np.random.default_rng(SEED)
    ssd = torchvision.models.detection.ssdlite320_mobilenet_v3_large(
        weights=None, weights_backbone=None, num_classes=10)
    model = DetectorHead(ssd)
    set_bn_statistics(model, lambda: torch.from_numpy(smooth_images(rng, 4, 3, (192, 192))),
                      batches=3)
    model.eval()
    path = os.path.join(outdir, "ssdlite_head.onnx")
    example = torch.from_numpy(smooth_images(rng, 1, 3, (192, 224)))
    dynamic = {"images": {0: "batch", 2: "height", 3: "width"},
               "bbox_regression": {0: "batch", 1: "anchors"},
               "cls_logits": {0: "batch", 1: "anchors"}}
    torch.onnx.export(model, (example,), path + ".tmp", input_names=["images"],
                      output_names=["bbox_regression", "cls_logits"], dynamic_axes=dynamic,
                      opset_version=13, do_constant_folding=True,
                      training=torch.onnx.TrainingMode.EVAL, **legacy_exporter())
    os.replace(path + ".tmp", path)
    folder = os.path.join(outdir, "ssdlite_head.samples")
    os.makedirs(folder, exist_ok=True)
    for k in range(2 * len(SIZES)):
        sample = smooth_images(rng, 1, 3, SIZES[k % len(SIZES)])[0]
        atomic_save_npy(os.path.join(folder, f"{k}.npy"), sample)


if __name__ == "__main__":
    main()
