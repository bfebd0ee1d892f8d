#!/usr/bin/env python3
"""The peer of `ptq calibrate --method entropy`: ONNX Runtime's static quantization with its
entropy calibrator, on the same model and the same .npy samples, timed, with this process's
peak RSS (resource.getrusage(RUSAGE_SELF).ru_maxrss).

    ort_quantize_static.py MODEL.onnx SAMPLES.npy [--samples N] [--batch B]
                           [--mode quantize|calibrate] [--out OUT.onnx]

--mode quantize (default): quantize_static(..., calibrate_method=CalibrationMethod.Entropy,
  quant_format=QDQ, int8 activations and per-channel int8 weights), the whole tool.
--mode calibrate: only ORT's calibration step (create_calibrator + collect_data +
  compute_data/compute_range), the part `ptq calibrate` does.
Prints one JSON line: {"tool", "mode", "samples", "batch", "seconds", "peak_rss_mb", "tensors"}.
Needs onnxruntime (with its quantization tool), onnx and numpy."""
import argparse
import json
import os
import resource
import sys
import tempfile
import time

import numpy as np
import onnx
from onnxruntime.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat,
                                      QuantType, quantize_static)
from onnxruntime.quantization.calibrate import create_calibrator


class NpyReader(CalibrationDataReader):
    """Batches of the first `samples` rows of a .npy file, read lazily (memory-mapped)."""

    def __init__(self, path, input_name, batch, samples):
        self.data = np.load(path, mmap_mode="r")
        self.n = len(self.data) if samples <= 0 else min(samples, len(self.data))
        self.name = input_name
        self.batch = batch
        self.pos = 0

    def get_next(self):
        if self.pos >= self.n:
            return None
        end = min(self.pos + self.batch, self.n)
        feed = {self.name: np.ascontiguousarray(self.data[self.pos:end], dtype=np.float32)}
        self.pos = end
        return feed

    def rewind(self):
        self.pos = 0


def input_name(model_path):
    graph = onnx.load(model_path, load_external_data=False).graph
    initializers = {i.name for i in graph.initializer}
    names = [i.name for i in graph.input if i.name not in initializers]
    if len(names) != 1:
        sys.exit(f"ort_quantize_static: expected one model input, found {names}")
    return names[0]


def calibrate_only(model, reader, workdir):
    calibrator = create_calibrator(model, None,
                                   augmented_model_path=os.path.join(workdir, "augmented.onnx"),
                                   calibrate_method=CalibrationMethod.Entropy)
    calibrator.collect_data(reader)
    if hasattr(calibrator, "compute_data"):
        ranges = calibrator.compute_data()
    else:  # onnxruntime < 1.16
        ranges = calibrator.compute_range()
    return len(getattr(ranges, "data", ranges))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("samples_npy")
    p.add_argument("--samples", type=int, default=0, help="first N samples (0: all)")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--mode", choices=["quantize", "calibrate"], default="quantize")
    p.add_argument("--out", default="", help="quantized model (default: a temporary file)")
    a = p.parse_args()
    reader = NpyReader(a.samples_npy, input_name(a.model), a.batch, a.samples)
    with tempfile.TemporaryDirectory() as workdir:
        start = time.perf_counter()
        if a.mode == "calibrate":
            tensors = calibrate_only(a.model, reader, workdir)
        else:
            out = a.out or os.path.join(workdir, "model.int8.onnx")
            quantize_static(a.model, out, reader, quant_format=QuantFormat.QDQ,
                            activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                            per_channel=True, calibrate_method=CalibrationMethod.Entropy)
            tensors = sum(1 for n in onnx.load(out, load_external_data=False).graph.node
                          if n.op_type == "QuantizeLinear")
        seconds = time.perf_counter() - start
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux
    print(json.dumps({"tool": "onnxruntime", "mode": a.mode, "samples": reader.n, "batch": a.batch,
                      "seconds": round(seconds, 3), "peak_rss_mb": round(rss_mb, 1),
                      "tensors": tensors}))


if __name__ == "__main__":
    main()
