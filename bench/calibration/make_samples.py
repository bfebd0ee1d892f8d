#!/usr/bin/env python3
"""Writes N random-normal float32 samples of shape C,H,W as a .npy file (seed fixed), chunk
by chunk so memory stays small whatever N:
    make_samples.py OUT.npy N [--shape 3,224,224] [--seed 0]
The first N samples are the same for every N with one seed (chunks are drawn in order)."""
import argparse

import numpy as np


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("n", type=int)
    p.add_argument("--shape", default="3,224,224")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    shape = tuple(int(d) for d in a.shape.split(","))
    rng = np.random.default_rng(a.seed)
    out = np.lib.format.open_memmap(a.out, mode="w+", dtype=np.float32, shape=(a.n,) + shape)
    chunk = 64
    for first in range(0, a.n, chunk):
        k = min(chunk, a.n - first)
        out[first:first + k] = rng.standard_normal((k,) + shape, dtype=np.float32)
    out.flush()
    del out


if __name__ == "__main__":
    main()
