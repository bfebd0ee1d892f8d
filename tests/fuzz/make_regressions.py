#!/usr/bin/python3
"""Writes the minimized inputs that once crashed libonnx 1.12's shape inference under the model
reader (found by fuzz_model_reader and by probing every op schema; see regressions/README).
Deterministic; the fuzzer's own finds (conv_pool_shape_inference.onnx,
gemm_duplicate_opset.onnx) are kept verbatim and not written here:

    /usr/bin/python3 tests/fuzz/make_regressions.py tests/fuzz/regressions
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh


def model(nodes, inputs, inits=(), opset=13, extra_opsets=()):
    out = h.make_tensor_value_info(nodes[-1].output[0], T.FLOAT, None)
    g = h.make_graph(nodes, "g", inputs, [out], initializer=list(inits))
    opsets = [h.make_opsetid("", opset)] + [h.make_opsetid(d, v) for d, v in extra_opsets]
    m = h.make_model(g, opset_imports=opsets)
    m.ir_version = 8
    return m


def value(name, dims, dtype=T.FLOAT):
    return h.make_tensor_value_info(name, dtype, dims)


def ones(name, shape, dtype=np.float32):
    return nh.from_array(np.ones(shape, dtype), name)


X4 = value("x", [1, 3, 8, 8])


def cases():
    n = h.make_node
    return {
        # Conv-like inference takes the spatial rank from x and the kernel from w's dims.
        "conv_transpose_weight_rank1.onnx": model(
            [n("ConvTranspose", ["x", "w"], ["y"], name="deconv")], [X4], [ones("w", [3])]),
        "qlinear_conv_rank_mismatch.onnx": model(
            [n("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qconv")],
            [value("x", [1, 3, 8, 8], T.UINT8), value("w", [4, 3, 3, 3, 3, 3], T.UINT8)],
            [ones("xs", []), ones("xz", [], np.uint8), ones("ws", []), ones("wz", [], np.uint8),
             ones("ys", []), ones("yz", [], np.uint8)]),
        # Inference divides by strides.
        "conv_stride_zero.onnx": model(
            [n("Conv", ["x", "w"], ["y"], name="conv", strides=[0, 0])], [X4], [ones("w", [4, 3, 3, 3])]),
        "max_pool_stride_zero.onnx": model(
            [n("MaxPool", ["x"], ["y"], name="pool", kernel_shape=[2, 2], strides=[0, 0])], [X4]),
        # MaxUnpool reads the indices' channel dim unchecked.
        "max_unpool_indices_rank1.onnx": model(
            [n("MaxUnpool", ["x", "i"], ["y"], name="unpool", kernel_shape=[2, 2])], [X4],
            [ones("i", [1], np.int64)]),
        "max_unpool_indices_empty.onnx": model(
            [n("MaxUnpool", ["x", ""], ["y"], name="unpool", kernel_shape=[2, 2])], [X4]),
        # Indices of unknown type (from a custom op) are not malformed: the model loads, with
        # nothing inferred for the node.
        "max_unpool_untyped_indices.onnx": model(
            [n("Mystery", [], ["i"], domain="com.example"),
             n("MaxUnpool", ["x", "i"], ["y"], name="unpool", kernel_shape=[2, 2])], [X4],
            extra_opsets=[("com.example", 1)]),
        # Old schemas index dims their spec fixes without checking the rank.
        "gemm_opset6_rank0.onnx": model(
            [n("Gemm", ["a", "b", "c"], ["y"], name="gemm")],
            [value("a", []), value("b", []), value("c", [])], opset=6),
        "lstm_opset1_rank1.onnx": model(
            [n("LSTM", ["x", "w", "r"], ["y"], name="lstm", hidden_size=1)],
            [value("x", [2]), value("w", [2]), value("r", [2])], opset=1),
        "stft_signal_rank1.onnx": model(
            [n("STFT", ["x", "step"], ["y"], name="stft")], [value("x", [16])],
            [ones("step", [], np.int64)], opset=17),
        # blocksize squared wraps to 0 and divides; a negative batch_dims indexes before dims.
        "depth_to_space_huge_blocksize.onnx": model(
            [n("DepthToSpace", ["x"], ["y"], name="d2s", blocksize=2**40)], [X4]),
        "gather_nd_negative_batch_dims.onnx": model(
            [n("GatherND", ["x", "i"], ["y"], name="gnd", batch_dims=-100)], [X4],
            [ones("i", [1, 1], np.int64)]),
    }


def main(out):
    os.makedirs(out, exist_ok=True)
    for name, m in cases().items():
        data = m.SerializeToString()
        assert len(data) < 4096, name
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
