// A synthetic CNN whose second conv, convB, reads an activation with one channel ~1000x larger
// than the others (per-tensor INT8 then rounds the other channels away): a sensitivity sweep
// must rank convB first, by a wide margin, in both modes.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ptq/ir.h"

namespace ptq::sensitivity::testing {

inline ir::Tensor random_tensor(ir::Shape shape, double stddev, std::mt19937& gen) {
  ir::Tensor t(ir::DType::kFloat32, std::move(shape));
  std::normal_distribution<float> d(0.0f, static_cast<float>(stddev));
  for (float& v : t.span<float>()) v = d(gen);
  return t;
}

inline ir::Node node(std::string name, std::string op, std::vector<std::string> in,
                     std::string out) {
  ir::Node n;
  n.name = std::move(name);
  n.op_type = std::move(op);
  n.inputs = std::move(in);
  n.outputs = {std::move(out)};
  return n;
}

inline ir::Node conv(const std::string& name, const std::string& in, const std::string& out) {
  ir::Node n = node(name, "Conv", {in, name + ".w", name + ".b"}, out);
  ir::Attribute pads;
  pads.name = "pads";
  pads.type = ir::AttrType::kInts;
  pads.ints = {1, 1, 1, 1};
  n.set_attr(pads);
  return n;
}

// x[N,16,8,8] -> convA -> Relu -> convB -> Relu -> convC -> Relu -> GAP -> Flatten -> fc -> y[N,10]
inline ir::Model outlier_model() {
  std::mt19937 gen(7);
  ir::Model m;
  m.set_opset("", 13);
  ir::Graph& g = m.graph;
  g.name = "outlier";
  ir::TypeInfo in_type{
      ir::DType::kFloat32,
      std::vector<ir::Dim>{ir::Dim::symbol("N"), ir::Dim::of(16), ir::Dim::of(8), ir::Dim::of(8)},
      ""};
  g.inputs.push_back({"x", in_type, ""});
  ir::TypeInfo out_type{ir::DType::kFloat32,
                        std::vector<ir::Dim>{ir::Dim::symbol("N"), ir::Dim::of(10)}, ""};
  g.outputs.push_back({"y", out_type, ""});
  const double s = std::sqrt(2.0 / (16 * 9));
  for (const char* c : {"convA", "convB", "convC"}) {
    g.set_initializer(std::string(c) + ".w", random_tensor({16, 16, 3, 3}, s, gen));
    g.set_initializer(std::string(c) + ".b", random_tensor({16}, 0.1, gen));
  }
  // The outlier channel: convA's output channel 0 is 1000x larger; convB reads it 1000x weaker,
  // so the float network is unaffected but convB's per-tensor input scale is 1000x too coarse.
  ir::Tensor* wa = g.mutable_initializer("convA.w");
  for (int64_t i = 0; i < 16 * 9; ++i) wa->data<float>()[i] *= 1000.0f;
  ir::Tensor* wb = g.mutable_initializer("convB.w");
  for (int64_t o = 0; o < 16; ++o) {
    for (int64_t k = 0; k < 9; ++k) wb->data<float>()[o * 16 * 9 + k] *= 1e-3f;
  }
  g.set_initializer("fc.w", random_tensor({16, 10}, 0.3, gen));
  g.set_initializer("fc.b", random_tensor({10}, 0.1, gen));
  g.nodes.push_back(conv("convA", "x", "a"));
  g.nodes.push_back(node("reluA", "Relu", {"a"}, "ar"));
  g.nodes.push_back(conv("convB", "ar", "b"));
  g.nodes.push_back(node("reluB", "Relu", {"b"}, "br"));
  g.nodes.push_back(conv("convC", "br", "c"));
  g.nodes.push_back(node("reluC", "Relu", {"c"}, "cr"));
  g.nodes.push_back(node("gap", "GlobalAveragePool", {"cr"}, "p"));
  g.nodes.push_back(node("flat", "Flatten", {"p"}, "f"));
  g.nodes.push_back(node("fc", "MatMul", {"f", "fc.w"}, "mm"));
  g.nodes.push_back(node("fc_bias", "Add", {"mm", "fc.b"}, "y"));
  return m;
}

}  // namespace ptq::sensitivity::testing
