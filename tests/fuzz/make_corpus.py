#!/usr/bin/python3
"""Writes the seed corpus of fuzz_model_reader: a few tiny valid ONNX models and broken variants
(each < 10 KB). Deterministic; run it again after changing it:

    /usr/bin/python3 tests/fuzz/make_corpus.py tests/fuzz/corpus
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


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


def main(out):
    os.makedirs(out, exist_ok=True)
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
    for name, data in seeds.items():
        assert len(data) < 10240, name
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
