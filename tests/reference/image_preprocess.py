#!/usr/bin/python3
"""Independent float64 reference of ptqkit's image preprocessing (include/ptq/data.h).

Decodes with Pillow, then: bilinear resize with half-pixel centres (PyTorch
interpolate(align_corners=False): src = (dst + 0.5) * in / out - 0.5, clamped at 0, the
upper neighbour clamped at in - 1), centre crop as torchvision (int(round((h - ch) / 2.0))),
x * scale / 255, (x - mean) / std, RGB or BGR, NCHW or NHWC. One channel uses stb_image's
luma, (77 R + 150 G + 29 B) >> 8 on 8-bit values.

usage: image_preprocess.py OUT.npy [--resize S|H,W] [--crop H,W] [--scale X] [--mean a,b,c]
       [--std a,b,c] [--bgr] [--layout nchw|nhwc] [--channels 1|3] IMAGE...
Writes float64 [N, ...] to OUT.npy.
"""
import argparse

import numpy as np
from PIL import Image


def floats(text):
    return [float(v) for v in text.split(",")]


def ints(text):
    return [int(v) for v in text.split(",")]


def axis_taps(n_in, n_out, offset, count):
    dst = np.arange(offset, offset + count, dtype=np.float64)
    src = (dst + 0.5) * (n_in / n_out) - 0.5
    src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    return i0, i1, src - i0


def resized_size(h, w, resize):
    if not resize:
        return h, w
    if len(resize) == 2:
        return resize[0], resize[1]
    s = resize[0]
    if h <= w:
        return s, int(s * w / h)
    return int(s * h / w), s


def preprocess(path, a):
    rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.int64)
    if a.channels == 1:
        px = ((rgb[..., 0] * 77 + rgb[..., 1] * 150 + rgb[..., 2] * 29) >> 8)[..., None]
    else:
        px = rgb
    px = px.astype(np.float64)
    h, w = px.shape[:2]
    rh, rw = resized_size(h, w, a.resize)
    if a.crop:
        ch, cw = a.crop
        top, left = int(round((rh - ch) / 2.0)), int(round((rw - cw) / 2.0))
    else:
        ch, cw, top, left = rh, rw, 0, 0
    y0, y1, wy = axis_taps(h, rh, top, ch)
    x0, x1, wx = axis_taps(w, rw, left, cw)
    wy, wx = wy[:, None, None], wx[None, :, None]
    t = px[y0][:, x0] * (1 - wx) + px[y0][:, x1] * wx
    b = px[y1][:, x0] * (1 - wx) + px[y1][:, x1] * wx
    out = t * (1 - wy) + b * wy
    out = out * (a.scale / 255.0)
    if a.bgr and a.channels == 3:
        out = out[..., ::-1]
    mean = np.broadcast_to(np.array(a.mean or [0.0]), (a.channels,))
    std = np.broadcast_to(np.array(a.std or [1.0]), (a.channels,))
    out = (out - mean) / std
    return out.transpose(2, 0, 1) if a.layout == "nchw" else out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("images", nargs="+")
    p.add_argument("--resize", type=ints, default=[])
    p.add_argument("--crop", type=ints, default=[])
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--mean", type=floats, default=[])
    p.add_argument("--std", type=floats, default=[])
    p.add_argument("--bgr", action="store_true")
    p.add_argument("--layout", default="nchw", choices=["nchw", "nhwc"])
    p.add_argument("--channels", type=int, default=3, choices=[1, 3])
    a = p.parse_args()
    np.save(a.out, np.ascontiguousarray(np.stack([preprocess(f, a) for f in a.images])))


if __name__ == "__main__":
    main()
