// A synthetic CNN whose second conv, convB, reads an activation with one channel ~1000x larger
// than the others (per-tensor INT8 then rounds the other channels away): a sensitivity sweep
// must rank convB first, by a wide margin, in both modes.
#pragma once

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "common/random.h"
#include "ptq/ir.h"
#include "ptq/ir/builders.h"

namespace ptq::sensitivity::testing {

using ptq::testing::normal_tensor;

inline ir::Node conv(const std::string& name, const std::string& in, const std::string& out) {
  ir::Node n = ir::make_node("Conv", name, {in, name + ".w", name + ".b"}, {out});
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
    g.set_initializer(std::string(c) + ".w",
                      normal_tensor(gen, {16, 16, 3, 3}, static_cast<float>(s)));
    g.set_initializer(std::string(c) + ".b", normal_tensor(gen, {16}, 0.1f));
  }
  // The outlier channel: convA's output channel 0 is 1000x larger; convB reads it 1000x weaker,
  // so the float network is unaffected but convB's per-tensor input scale is 1000x too coarse.
  ir::Tensor* wa = g.mutable_initializer("convA.w");
  for (int64_t i = 0; i < 16 * 9; ++i) wa->data<float>()[i] *= 1000.0f;
  ir::Tensor* wb = g.mutable_initializer("convB.w");
  for (int64_t o = 0; o < 16; ++o) {
    for (int64_t k = 0; k < 9; ++k) wb->data<float>()[o * 16 * 9 + k] *= 1e-3f;
  }
  g.set_initializer("fc.w", normal_tensor(gen, {16, 10}, 0.3f));
  g.set_initializer("fc.b", normal_tensor(gen, {10}, 0.1f));
  g.nodes.push_back(conv("convA", "x", "a"));
  g.nodes.push_back(ir::make_node("Relu", "reluA", {"a"}, {"ar"}));
  g.nodes.push_back(conv("convB", "ar", "b"));
  g.nodes.push_back(ir::make_node("Relu", "reluB", {"b"}, {"br"}));
  g.nodes.push_back(conv("convC", "br", "c"));
  g.nodes.push_back(ir::make_node("Relu", "reluC", {"c"}, {"cr"}));
  g.nodes.push_back(ir::make_node("GlobalAveragePool", "gap", {"cr"}, {"p"}));
  g.nodes.push_back(ir::make_node("Flatten", "flat", {"p"}, {"f"}));
  g.nodes.push_back(ir::make_node("MatMul", "fc", {"f", "fc.w"}, {"mm"}));
  g.nodes.push_back(ir::make_node("Add", "fc_bias", {"mm", "fc.b"}, {"y"}));
  return m;
}

}  // namespace ptq::sensitivity::testing
