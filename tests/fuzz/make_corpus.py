#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets, one folder each (every file < 10 KB):
model/ (fuzz_model_reader: tiny valid ONNX models and broken variants), npy/, npz/, image/ and
cache/ (arrays, archives, PNG/JPEG images and calibration caches of every format, as NumPy,
Pillow and ptqkit write them, and a few broken ones). Deterministic; run it again after
changing it:

    /usr/bin/python3 tests/fuzz/make_corpus.py tests/fuzz/corpus
"""
import io
import os
import sys
import zipfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from PIL import Image


def relu():
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"], name="relu")], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], producer_name="seed")


def conv_qdq():
    rng = np.random.default_rng(1)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = helper.make_tensor("b", TensorProto.FLOAT, [4], [0.5, -1.0, 2.0, 0.0])  # float_data
    s = helper.make_tensor("s", TensorProto.FLOAT, [], [0.05])
    z = helper.make_tensor("z", TensorProto.INT8, [], [0])  # int32_data
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "s", "z"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "s", "z"], ["d"]),
        helper.make_node("Conv", ["d", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Shape", ["c"], ["shp"]),
        helper.make_node("Reshape", ["c", "shp"], ["y"]),
    ]
    g = helper.make_graph(
        nodes, "conv", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, b, s, z])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.metadata_props.append(onnx.StringStringEntryProto(key="k", value="v"))
    return m


def control_flow():
    then_g = helper.make_graph([helper.make_node("Neg", ["a"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Abs", ["a"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    nodes = [
        helper.make_node("Constant", [], ["a"], value=helper.make_tensor("v", TensorProto.FLOAT, [2], [1.0, -2.0])),
        helper.make_node("If", ["cond"], ["y"], then_branch=then_g, else_branch=else_g),
        helper.make_node("Custom", ["y"], ["z"], domain="com.example", note="opaque"),
    ]
    g = helper.make_graph(
        nodes, "cf", [helper.make_tensor_value_info("cond", TensorProto.BOOL, [])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("com.example", 1)])


def all_dtypes():
    inits = []
    nodes = []
    outs = []
    for i, dt in enumerate([np.float32, np.float16, np.float64, np.int8, np.uint8, np.int16, np.uint16,
                            np.int32, np.int64, np.uint32, np.uint64, np.bool_]):
        name = "t%d" % i
        inits.append(numpy_helper.from_array(np.arange(6).reshape(2, 3).astype(dt), name))
        nodes.append(helper.make_node("Identity", [name], [name + "_o"]))
        outs.append(helper.make_tensor_value_info(name + "_o", onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[np.dtype(dt)], [2, 3]))
    inits.append(helper.make_tensor("str", TensorProto.STRING, [2], [b"ab", b"c"]))
    nodes.append(helper.make_node("Identity", ["str"], ["str_o"]))
    outs.append(helper.make_tensor_value_info("str_o", TensorProto.STRING, [2]))
    g = helper.make_graph(nodes, "dtypes", [], outs, inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def external():
    m = relu()
    t = m.graph.initializer.add()
    t.name = "w"
    t.data_type = TensorProto.FLOAT
    t.dims.append(4)
    t.data_location = TensorProto.EXTERNAL
    for k, v in [("location", "w.bin"), ("offset", "0"), ("length", "16")]:
        t.external_data.append(onnx.StringStringEntryProto(key=k, value=v))
    return m


def op_zoo():
    """A chain of the ops whose shape inference indexes dims by rank or divides by attributes
    (libonnx crashed on malformed forms of each): mutations of it reach those paths."""
    rng = np.random.default_rng(2)

    def w(name, *shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)

    def i64(name, values):
        return numpy_helper.from_array(np.array(values, np.int64), name)

    n = helper.make_node
    nodes = [
        n("Conv", ["x", "cw"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1], dilations=[1, 1]),
        n("MaxPool", ["c"], ["p", "pi"], kernel_shape=[2, 2], strides=[2, 2]),
        n("MaxUnpool", ["p", "pi"], ["u"], kernel_shape=[2, 2], strides=[2, 2]),
        n("AveragePool", ["u"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
        n("ConvTranspose", ["a", "tw"], ["t"], strides=[2, 2]),
        n("DepthToSpace", ["t"], ["d"], blocksize=2),
        n("SpaceToDepth", ["d"], ["s"], blocksize=2),
        n("LpPool", ["s"], ["lp"], kernel_shape=[2, 2], strides=[2, 2]),
        n("Reshape", ["lp", "shape"], ["r"]),
        n("Gemm", ["r", "gw", "gb"], ["g"]),
        n("Unsqueeze", ["g", "axes"], ["q"]),
        n("LSTM", ["q", "lw", "lr"], ["l"], hidden_size=2),
        n("GatherND", ["l", "idx"], ["y"], batch_dims=0),
    ]
    inits = [w("cw", 4, 4, 3, 3), w("tw", 4, 4, 2, 2), i64("shape", [1, 64]), w("gw", 64, 8),
             w("gb", 8), i64("axes", [0]), w("lw", 1, 8, 8), w("lr", 1, 8, 2), i64("idx", [[0]])]
    g = helper.make_graph(
        nodes, "zoo", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])


def model_seeds():
    seeds = {
        "relu.onnx": relu().SerializeToString(),
        "conv_qdq.onnx": conv_qdq().SerializeToString(),
        "control_flow.onnx": control_flow().SerializeToString(),
        "all_dtypes.onnx": all_dtypes().SerializeToString(),
        "external.onnx": external().SerializeToString(),
        "op_zoo.onnx": op_zoo().SerializeToString(),
    }
    conv = seeds["conv_qdq.onnx"]
    seeds["truncated.onnx"] = conv[: len(conv) // 2]
    cyc = relu()
    cyc.graph.node.append(helper.make_node("Neg", ["y"], ["x2"]))
    cyc.graph.node[0].input[0] = "x2"
    seeds["cycle.onnx"] = cyc.SerializeToString()
    bad = conv_qdq()
    bad.graph.initializer[0].raw_data = bad.graph.initializer[0].raw_data[:10]
    seeds["size_mismatch.onnx"] = bad.SerializeToString()
    old = relu()
    old.ir_version = 2
    seeds["ir2.onnx"] = old.SerializeToString()
    seeds["garbage.onnx"] = bytes(range(256))
    return seeds


def npy(arr, version=None):
    f = io.BytesIO()
    np.lib.format.write_array(f, arr, version=version)
    return f.getvalue()


def npy_seeds():
    rng = np.random.default_rng(3)
    f4 = rng.standard_normal((3, 2, 2)).astype("<f4")
    return {
        "f4.npy": npy(f4),
        "f2_v2.npy": npy(f4.astype("<f2"), (2, 0)),
        "f8_v3.npy": npy(f4.astype("<f8"), (3, 0)),
        "be_i8.npy": npy(np.arange(6, dtype=">i8").reshape(3, 2)),
        "u1.npy": npy(np.arange(5, dtype="u1")),
        "b1.npy": npy(np.array([[True, False], [False, True]])),
        "scalar.npy": npy(np.array(1.5, "<f4")),
        "empty.npy": npy(np.zeros((0, 3), "<f4")),
        "fortran.npy": npy(np.asfortranarray(f4[0])),
        "truncated.npy": npy(f4)[:-5],
    }


def zip_bytes(members, compression, zip64=False):
    """An npz as np.savez writes it, with fixed timestamps so the bytes are reproducible."""
    f = io.BytesIO()
    with zipfile.ZipFile(f, "w", compression) as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = compression
            with z.open(info, "w", force_zip64=zip64) as m:
                m.write(data)
    return f.getvalue()


def npz_seeds():
    rng = np.random.default_rng(4)
    members = {"x.npy": npy(rng.standard_normal((4, 3)).astype("<f4")),
               "y.npy": npy(np.arange(4, dtype="<i8"))}
    stored, deflated = zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED
    return {
        "stored.npz": zip_bytes(members, stored),
        "deflated.npz": zip_bytes(members, deflated),
        "zip64.npz": zip_bytes(members, deflated, zip64=True),
        "unnamed.npz": zip_bytes({"arr_0.npy": members["x.npy"]}, deflated),
        "not_npy.npz": zip_bytes({"readme.txt": b"hello"}, stored),
        "empty.npz": zip_bytes({}, stored),
    }


def image(mode, size, fmt, **options):
    rng = np.random.default_rng(5)
    channels = {"L": 1, "RGB": 3, "RGBA": 4}[mode]
    px = rng.integers(0, 256, (size[1], size[0], channels), dtype=np.uint8)
    f = io.BytesIO()
    Image.fromarray(px[:, :, 0] if channels == 1 else px, mode).save(f, fmt, **options)
    return f.getvalue()


def image_seeds():
    palette = Image.new("P", (5, 3))
    palette.putpalette([i % 256 for i in range(768)])
    p = io.BytesIO()
    palette.save(p, "PNG")
    return {
        "rgb.png": image("RGB", (7, 5), "PNG"),
        "gray.png": image("L", (4, 6), "PNG"),
        "rgba_interlaced.png": image("RGBA", (9, 7), "PNG", interlace=1),
        "palette.png": p.getvalue(),
        "baseline.jpg": image("RGB", (16, 12), "JPEG", quality=90),
        "progressive.jpg": image("RGB", (17, 9), "JPEG", progressive=True),
        "gray.jpg": image("L", (8, 8), "JPEG"),
        "subsampled.jpg": image("RGB", (19, 21), "JPEG", subsampling=2),
    }


def cache_seeds():
    """A ptqkit JSON cache as docs/CACHE_FORMAT.md shows it, and the others ptqkit reads."""
    json_cache = (
        '{\n'
        '  "calibration": {"backend":"cpu","batch":2,"date":"2024-05-01T12:00:00Z",'
        '"histogram_bins":2048,"ignore_nonfinite":false,"method":"percentile",'
        '"params":{"percentile":99.99},"ptqkit_version":"0.1.0","samples":2},\n'
        '  "format": "ptqkit-calibration",\n'
        '  "model": {"graph_sha256":"5f0c","inputs":[{"name":"input","shape":[2,3]}],'
        '"opset":17},\n'
        '  "provenance": {"trt_version":"8.6.1"},\n'
        '  "tensors": {\n'
        '    "conv1/Relu:0": {"amax":3.0,"count":3,"histogram":{"bins":2048,'
        '"counts":[[0,2],[2047,1]],"range":3.0},"max":3.0,"min":0.0,"nonfinite":0,'
        '"scale":0.023622047244094488},\n'
        '    "input": {"amax":2.0,"count":6,"max":2.0,"min":null,"nonfinite":0,"scale":1e300}\n'
        '  },\n'
        '  "version": 1\n'
        '}\n')
    return {
        "ptqkit.json": json_cache.encode(),
        "tensorrt.cache": b"TRT-8601-EntropyCalibration2\n/layer1/conv/Conv_output_0: 40008102\n"
                          b"input: 3c010204\nname:with: colons: 7f800000\r\n\n",
        "tensorrt10.cache": b"TRT-100300-MinMaxCalibration\ninput: 3c010204\n",
        "ort.cache": b"input 2.5\nconv1/Relu:0 -0.125\nnan_tensor nan\nbig 1e308\n",
        "ort_minmax.json": b'{"input": [-1.5, 2.0], "relu": [0, 3e38]}\n',
        "ort_tensors_data.json": (
            b'{"CLS": "TensorsData", "calibration_method": {"CLS": "CalibrationMethod", '
            b'"value": "CalibrationMethod.Entropy"}, "data": {"input": {"CLS": "TensorData", '
            b'"lowest": {"CLS": "numpy.array", "data": [-1.0], "dtype": "float32"}, '
            b'"highest": {"CLS": "numpy.array", "data": [[2.0]], "dtype": "float32"}, '
            b'"hist": [1, 2]}}}\n'),
    }


def main(out):
    corpora = {"model": model_seeds(), "npy": npy_seeds(), "npz": npz_seeds(),
               "image": image_seeds(), "cache": cache_seeds()}
    for target, seeds in corpora.items():
        folder = os.path.join(out, target)
        os.makedirs(folder, exist_ok=True)
        for name, data in seeds.items():
            assert len(data) < 10240, name
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
