#!/usr/bin/python3
"""Writes the minimized inputs that once crashed libonnx 1.12's shape inference under the model
reader (found by fuzz_model_reader and by probing every op schema), and the hand-made inputs
that crashed or misled the data and cache readers (see regressions/README). Deterministic; the
fuzzers' own finds (conv_pool_shape_inference.onnx, gemm_duplicate_opset.onnx, the .jpg files)
are kept verbatim and not written here:

    /usr/bin/python3 tests/fuzz/make_regressions.py tests/fuzz/regressions
"""
import os
import struct
import sys
import zlib

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


def npy_header(descr, shape):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        descr, ", ".join(str(x) for x in shape))
    d += " " * ((-(10 + len(d) + 1)) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode()


def npz_member_beyond_deflate():
    """A deflated member whose directory records 2^40 bytes (its header claims as much) for a
    stream of a few bytes: more than deflate's 1032:1 can hold."""
    header = npy_header("<f4", [1 << 38])
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    stream = c.compress(header) + c.flush()
    size = len(header) + (1 << 40)
    name = b"x.npy"
    extra = struct.pack("<HHQQ", 1, 16, size, len(stream))
    local = struct.pack("<IHHHHHIIIHH", 0x04034b50, 45, 0, 8, 0, 0x21, zlib.crc32(header),
                        0xffffffff, 0xffffffff, len(name), len(extra)) + name + extra
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014b50, 45, 45, 0, 8, 0, 0x21,
                          zlib.crc32(header), 0xffffffff, 0xffffffff, len(name), len(extra),
                          0, 0, 0, 0, 0) + name + extra
    at = len(local) + len(stream)
    end = struct.pack("<IHHHHIIH", 0x06054b50, 0, 0, 1, 1, len(central), at, 0)
    return local + stream + central + end


def reader_cases():
    return {
        # 10^14 samples of shape (0,): no bytes bound the count the dataset allocated for.
        "npy_zero_width_samples.npy": npy_header("<f4", [100000000000000, 0]),
        "npz_member_beyond_deflate.npz": npz_member_beyond_deflate(),
        # nlohmann throws out_of_range, not parse_error, for a number beyond double's range.
        "ort_json_number_overflow.json": b'{"x": [-1, 2],\n "y": [0, 1e999]}\n',
        "ptqkit_json_number_overflow.json":
            b'{"format": "ptqkit-calibration",\n "version": 1e999}\n',
    }


def main(out):
    os.makedirs(out, exist_ok=True)
    files = {name: m.SerializeToString() for name, m in cases().items()}
    files.update(reader_cases())
    for name, data in files.items():
        assert len(data) < 4096, name
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
