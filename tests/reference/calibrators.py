#!/usr/bin/python3
"""Independent NumPy reference of ptqkit's calibrators (shared specs/calibrators.md).

Written from the spec text, not from the C++ code. Usage:

    /usr/bin/python3 calibrators.py [--percentile 99.99] SAMPLES.npy OUT.json [SAMPLES2.npy OUT2.json …]

Reads every value of SAMPLES.npy (any shape, float32/float16/float64) as one tensor seen over
the whole calibration set and writes OUT.json:

    {"T": ..., "min": ..., "max": ..., "count": N,
     "histogram": [2048 counts],
     "amax": {"minmax": ..., "entropy": ..., "percentile": ..., "mse": ...},
     "bin": {"entropy": i, "percentile": k, "mse": i}}

Floats are written with repr() (shortest round-trip), so the C++ test compares exact values.
"""
import argparse
import json
import math

import numpy as np

B = 2048


def histogram(x):
    """Min-max pass, then the |x| histogram over [0, T] with the spec's bin rule (float64)."""
    v = np.abs(x.astype(np.float64).ravel())
    T = float(v.max()) if v.size else 0.0
    counts = np.zeros(B, dtype=np.uint64)
    if T == 0.0:
        counts[0] = v.size  # all zeros: v = 0 falls in bin 0
        return T, counts
    b = np.floor(v / T * 2048.0)
    b = np.minimum(b, B - 1).astype(np.int64)
    counts += np.bincount(b, minlength=B).astype(np.uint64)
    return T, counts


def entropy(T, counts):
    """TensorRT EntropyCalibration2 as in the spec's pseudocode; returns (best i, amax)."""
    w = T / B
    H = counts.astype(np.float64).copy()
    H[0] = 0.0
    if H.sum() == 0.0:
        return None, T  # degenerate (no counts outside bin 0): keep the full range
    best_i, best_kl = None, math.inf
    for i in range(128, B + 1):
        P = H[:i].copy()
        P[i - 1] += H[i:].sum()
        # Merge the kept bins into 128 levels [lo, hi); Q spreads each level's sum evenly
        # over its non-empty bins. lev[j] is the level of bin j.
        k = np.arange(128)
        lo = (k * i) // 128
        hi = ((k + 1) * i) // 128
        lev = np.repeat(k, hi - lo)
        kept = H[:i]
        nonzero = kept != 0
        level_sum = np.bincount(lev, weights=kept, minlength=128)
        level_nz = np.bincount(lev, weights=nonzero.astype(np.float64), minlength=128)
        per_bin = np.divide(level_sum, level_nz, out=np.zeros(128), where=level_nz > 0)
        Q = np.where(nonzero, per_bin[lev], 0.0)
        m = P > 0
        if np.any(Q[m] == 0):
            kl = math.inf  # Q is 0 where P is not
        else:
            p = P / P.sum()
            q = Q / Q.sum()
            kl = float(np.sum(p[m] * np.log(p[m] / q[m])))
        if best_i is None or kl < best_kl:
            best_i, best_kl = i, kl
    return best_i, min((best_i + 0.5) * w, T)


def percentile(T, counts, p):
    w = T / B
    cum = np.cumsum(counts.astype(np.uint64))
    total = cum[-1]
    if total == 0:
        return None, T
    cdf = cum.astype(np.float64) / float(total)
    k = int(np.argmax(cdf >= p / 100.0))
    if cdf[k] < p / 100.0:
        k = B - 1
    return k, (k + 1) * w


def mse(T, counts):
    w = T / B
    H = counts.astype(np.float64)
    j = np.arange(B, dtype=np.float64)
    c = (j + 0.5) * w
    best_i, best_err = None, math.inf
    for i in range(128, B + 1):
        a = i * w
        s = a / 127
        qv = np.clip(np.round(c / s), -127, 127) * s  # np.round: round half to even
        err = float(np.sum(H * (c - qv) ** 2))
        if best_i is None or err < best_err:
            best_i, best_err = i, err
    return best_i, best_i * w


def reference(x, p):
    T, counts = histogram(x)
    xd = x.astype(np.float64).ravel()
    out = {
        "T": T,
        "min": float(xd.min()) if xd.size else 0.0,
        "max": float(xd.max()) if xd.size else 0.0,
        "count": int(xd.size),
        "histogram": [int(c) for c in counts],
        "amax": {},
        "bin": {},
    }
    if T == 0.0:
        for m in ("minmax", "entropy", "percentile", "mse"):
            out["amax"][m] = 0.0
            out["bin"][m] = None
        return out
    out["amax"]["minmax"] = T
    out["bin"]["minmax"] = None
    for name, (b, a) in (("entropy", entropy(T, counts)),
                         ("percentile", percentile(T, counts, p)),
                         ("mse", mse(T, counts))):
        out["amax"][name] = a
        out["bin"][name] = b
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--percentile", type=float, default=99.99)
    ap.add_argument("paths", nargs="+", help="SAMPLES.npy OUT.json pairs")
    args = ap.parse_args()
    if len(args.paths) % 2 != 0:
        ap.error("expected SAMPLES.npy OUT.json pairs")
    for samples, out_path in zip(args.paths[0::2], args.paths[1::2]):
        out = reference(np.load(samples), args.percentile)
        with open(out_path, "w") as f:
            json.dump(out, f)


if __name__ == "__main__":
    main()
