// Precision per layer, counts and parameter bytes, the DOT drawing, and Q/DQ -> table, on small
// graphs built by hand whose answers can be worked out on paper.
#include <gtest/gtest.h>

#include <cmath>

#include "qdq_builder.h"

namespace ptq::report {
namespace {

using testing::QdqBuilder;

//   x ─► Q/DQ ─► conv1 ◄─ DQ ◄─ w1 int8 [16,16,3,3]
//                  └─► c1 ─► relu ─► r1 ─► conv2 ◄─ w2 float [16,16,3,3] ─► y
//   x ─► Shape ─► s (int64)                          conv3: x (float) with DQ(w3): mixed
QdqBuilder sample() {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", b.qdq("x"), b.qweight("w1", {16, 16, 3, 3}), "c1", 16);
  b.node("Relu", "relu", {"c1"}, {"r1"});
  b.conv_with("conv2", "r1", b.weight("w2", {16, 16, 3, 3}), "y", 16);
  b.conv_with("conv3", "x", b.qweight("w3", {16, 16, 3, 3}), "z", 16);
  b.node("Shape", "shape", {"x"}, {"s"});
  ir::ValueInfo s;
  s.name = "s";
  s.type.dtype = ir::DType::kInt64;
  b.g().value_info.push_back(s);
  b.output("y", {1, 16, 8, 8});
  b.output("z");
  return b;
}

const LayerInfo& layer(const PrecisionSummary& s, const std::string& name) {
  for (const LayerInfo& l : s.layers) {
    if (l.name == name) return l;
  }
  static LayerInfo none;
  ADD_FAILURE() << "no layer " << name;
  return none;
}

const OpTypeRow& row(const PrecisionSummary& s, const std::string& op) {
  for (const OpTypeRow& r : s.by_op_type) {
    if (r.op_type == op) return r;
  }
  static OpTypeRow none;
  ADD_FAILURE() << "no row " << op;
  return none;
}

constexpr size_t kInt8 = static_cast<size_t>(Precision::kInt8);
constexpr size_t kMixed = static_cast<size_t>(Precision::kMixed);
constexpr size_t kFloat = static_cast<size_t>(Precision::kFloat);
constexpr size_t kQdq = static_cast<size_t>(Precision::kQdq);
constexpr size_t kOther = static_cast<size_t>(Precision::kOther);

TEST(Precision, PerLayer) {
  const QdqBuilder b = sample();
  const PrecisionSummary s = summarize_precision(b.model);
  EXPECT_EQ(layer(s, "conv1").precision, Precision::kInt8);
  EXPECT_EQ(layer(s, "relu").precision, Precision::kFloat);
  EXPECT_EQ(layer(s, "conv2").precision, Precision::kFloat);
  EXPECT_EQ(layer(s, "conv3").precision, Precision::kMixed);
  EXPECT_EQ(layer(s, "shape").precision, Precision::kOther);
  EXPECT_EQ(layer(s, "x_Q").precision, Precision::kQdq);
  EXPECT_EQ(layer(s, "conv1").inputs, "x_dq:int8, w1_dq:int8/axis0, conv1.bias:float32");
  EXPECT_EQ(layer(s, "conv2").output, "y [1, 16, 8, 8] float32");
  EXPECT_EQ(s.weighted_ops, 3);
  EXPECT_EQ(s.weighted_int8, 1);
  EXPECT_EQ(s.quantize_nodes, 1);
  EXPECT_EQ(s.dequantize_nodes, 3);
}

TEST(Precision, CountsAndBytes) {
  const QdqBuilder b = sample();
  const PrecisionSummary s = summarize_precision(b.model);
  const OpTypeRow& conv = row(s, "Conv");
  EXPECT_EQ(conv.count[kInt8], 1);
  EXPECT_EQ(conv.count[kMixed], 1);
  EXPECT_EQ(conv.count[kFloat], 1);
  // int8 weight 16*16*9 bytes + float bias 16*4 bytes.
  EXPECT_EQ(conv.param_bytes[kInt8], 2304 + 64);
  EXPECT_EQ(conv.param_bytes[kMixed], 2304 + 64);
  EXPECT_EQ(conv.param_bytes[kFloat], 2304 * 4 + 64);
  EXPECT_EQ(layer(s, "conv1").params, 2304 + 16);
  // Scales and zero points: x (4 + 1 bytes), w1 and w3 (16 * 4 + 16 bytes each).
  EXPECT_EQ(row(s, "QuantizeLinear").param_bytes[kQdq], 5);
  EXPECT_EQ(row(s, "DequantizeLinear").param_bytes[kQdq], 160);
  EXPECT_EQ(row(s, "DequantizeLinear").count[kQdq], 3);
  EXPECT_EQ(row(s, "Shape").count[kOther], 1);
  int64_t all = 0;
  for (const ir::Initializer& i : b.model.graph.initializers())
    all += static_cast<int64_t>(i.tensor.nbytes());
  EXPECT_EQ(s.total_param_bytes, all);
  int64_t rows = 0;
  for (const OpTypeRow& r : s.by_op_type) rows += r.total_bytes();
  EXPECT_EQ(rows, all);
  const std::string text = precision_text(s);
  EXPECT_NE(text.find("1 of 3 weighted ops run in INT8"), std::string::npos) << text;
}

TEST(Dot, CollapsedDrawingColoursByPrecisionAndLabelsEdges) {
  const QdqBuilder b = sample();
  const std::string dot = graph_dot(b.model);
  EXPECT_EQ(dot.rfind("digraph model {", 0), 0u);
  // conv1 is node 3 (x_Q, x_DQ, w1_DQ come first), INT8 green; conv2 float blue.
  EXPECT_NE(dot.find("n3 [fillcolor=\"#7fc97f\", label=\"conv1\\nConv"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[fillcolor=\"#9ecae1\", label=\"conv2\\nConv"), std::string::npos) << dot;
  EXPECT_NE(dot.find("[fillcolor=\"#fdc086\", label=\"conv3\\nConv"), std::string::npos) << dot;
  // The Q/DQ pair on x is one bold edge from the input, labelled with shape, dtype and scale.
  EXPECT_NE(dot.find("in0 -> n3 [label=\"[1, 16, 8, 8] float32\\nQ/DQ int8 scale 0.02\", "
                     "penwidth=2.5"),
            std::string::npos)
      << dot;
  EXPECT_EQ(dot.find("x_Q"), std::string::npos) << "Q/DQ nodes are collapsed";
  EXPECT_NE(dot.find("w1_int8 [16, 16, 3, 3] int8/axis0"), std::string::npos) << dot;
  DotOptions all;
  all.collapse_qdq = false;
  const std::string full = graph_dot(b.model, all);
  EXPECT_NE(full.find("label=\"x_Q\\nQuantizeLinear\""), std::string::npos) << full;
  EXPECT_NE(full.find("label=\"w1_DQ\\nDequantizeLinear\""), std::string::npos) << full;
}

TEST(Dot, RendersSvgThroughGraphviz) {
  ASSERT_TRUE(have_graphviz()) << "Graphviz 'dot' is a dependency (scripts/install-deps.sh)";
  auto svg = render_svg(graph_dot(sample().model));
  ASSERT_TRUE(svg.has_value()) << svg.status().message();
  EXPECT_NE(svg->find("<svg"), std::string::npos);
  EXPECT_NE(svg->find("conv1"), std::string::npos);
  auto bad = render_svg("digraph { a -> ");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("Graphviz 'dot' failed"), std::string::npos)
      << bad.status().message();
}

//   a ─► Q (int8, scale 0.02) ─► DQ ─► Add ◄─ DQ ◄─ Q (uint8 zp 128, scale 0.02) ◄─ b
//   a is quantized a second time with scale 0.03 (a wider range wins, with a warning)
TEST(QdqToTable, ReadsSymmetricAndAsymmetricRanges) {
  QdqBuilder b;
  b.input("a", {4});
  b.input("b", {4});
  const std::string a1 = b.qdq("a", 0.02f);
  const std::string bq = b.qdq("b", 0.02f, 128, ir::DType::kUInt8);
  b.node("Add", "add", {a1, bq}, {"y"});
  b.g().set_initializer("a2_s", ir::make_tensor<float>({}, {0.03f}));
  b.g().set_initializer("a2_z", ir::Tensor(ir::DType::kInt8, {}));
  b.node("QuantizeLinear", "a_Q2", {"a", "a2_s", "a2_z"}, {"a_q2"});
  b.node("DequantizeLinear", "a_DQ2", {"a_q2", "a2_s", "a2_z"}, {"y2"});
  b.output("y");
  b.output("y2");
  std::vector<std::string> warnings;
  auto t = qdq_to_table(b.model, &warnings);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  ASSERT_EQ(t->tensors.size(), 2u);
  EXPECT_NEAR(t->find("a")->amax, 0.03 * 127, 1e-6);
  EXPECT_TRUE(std::isnan(t->find("a")->min));
  EXPECT_NEAR(t->find("b")->min, -128 * 0.02, 1e-6);
  EXPECT_NEAR(t->find("b")->max, 127 * 0.02, 1e-6);
  EXPECT_NEAR(t->find("b")->amax, 128 * 0.02, 1e-6);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("'a'"), std::string::npos);
  // The table survives the ptqkit JSON cache.
  auto back = calib::parse_json_cache(calib::json_cache_string(*t), "t.json");
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_NEAR(back->find("a")->amax, t->find("a")->amax, 1e-12);
  EXPECT_EQ(back->method, "qdq");
}

TEST(QdqToTable, WeightsAreNotActivationsAndNoQIsAnError) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", "x", b.qweight("w1", {16, 16, 3, 3}), "y", 16);
  b.output("y");
  auto t = qdq_to_table(b.model);
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(t.status().message().find("no QuantizeLinear"), std::string::npos);
}

TEST(QdqToTable, BadScaleIsAnError) {
  QdqBuilder b;
  b.input("x", {4});
  b.output(b.qdq("x", -1.0f));
  auto t = qdq_to_table(b.model);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.status().message().find("x_Q"), std::string::npos) << t.status().message();
}

}  // namespace
}  // namespace ptq::report
