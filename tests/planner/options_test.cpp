// Options, exclusions, units, missing ranges, already-quantized models, opset, ORT target.
#include <map>
#include <tuple>

#include "builder.h"

namespace ptq::planner::testing {
namespace {

TEST(Options, ExclusionsByRegexAndOpType) {
  Builder b = chain();
  PlanOptions o;
  o.exclude_nodes = {"conv[12]"};
  o.exclude_op_types = {"Gemm"};
  auto p = plan(b.model, b.table(), o);
  ASSERT_TRUE(p.has_value()) << p.status().message();
  EXPECT_FALSE(p->node("conv1")->quantized);
  EXPECT_NE(p->node("conv1")->reason.find("conv[12]"), std::string::npos);
  EXPECT_FALSE(p->node("conv2")->quantized);
  EXPECT_TRUE(p->node("conv3")->quantized);
  EXPECT_FALSE(p->node("fc")->quantized);
  EXPECT_NE(p->node("fc")->reason.find("Gemm"), std::string::npos);

  o.method = "entropy";
  o.ptqkit_version = "0.1.0";
  o.cache_hash = "abc123";
  quantize_ok(b.model, b.table(), o);
  const ir::Model& m = b.model;
  EXPECT_EQ(dq_at(m, "conv1", 0), nullptr);
  EXPECT_EQ(dq_at(m, "conv2", 1), nullptr);
  EXPECT_NE(dq_at(m, "conv3", 1), nullptr);
  EXPECT_EQ(dq_at(m, "fc", 0), nullptr);
  EXPECT_NE(dq_at(m, "gap", 0), nullptr);  // next to the INT8 conv3
  ASSERT_NE(m.metadata("ptqkit.excluded_nodes"), nullptr);
  EXPECT_EQ(*m.metadata("ptqkit.excluded_nodes"), "conv1,conv2,fc");
  EXPECT_EQ(*m.metadata("ptqkit.method"), "entropy");
  EXPECT_EQ(*m.metadata("ptqkit.cache_hash"), "abc123");
  EXPECT_EQ(*m.metadata("ptqkit.target"), "tensorrt");
}

TEST(Options, ExclusionNamingNoNodeListsCloseMatches) {
  Builder b = chain();
  PlanOptions o;
  o.exclude_nodes = {"cnv2"};
  auto p = plan(b.model, b.table(), o);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.status().code(), StatusCode::kUsage);
  EXPECT_NE(p.status().message().find("'cnv2'"), std::string::npos);
  EXPECT_NE(p.status().message().find("'conv2'"), std::string::npos);

  PlanOptions u;
  u.only_units = {"conv9"};
  auto q = plan(b.model, b.table(), u);
  ASSERT_FALSE(q.has_value());
  EXPECT_NE(q.status().message().find("did you mean"), std::string::npos);

  PlanOptions bad;
  bad.activation_type = ActivationType::kUInt8;  // TensorRT takes INT8 only
  EXPECT_FALSE(plan(b.model, b.table(), bad).has_value());
}

// x -> conv1 -> relu1 -> conv2 -> relu2 -> conv3 -> relu3 -> gap -> flatten -> fc -> y
TEST(Options, QuantizeNodesAndOpTypesRestrictThePlan) {
  Builder b = chain();
  PlanOptions o;
  o.quantize_op_types = {"Conv"};
  auto p = plan(b.model, b.table(), o);
  ASSERT_TRUE(p.has_value()) << p.status().message();
  for (const char* conv : {"conv1", "conv2", "conv3"}) {
    EXPECT_TRUE(p->node(conv)->quantized) << conv;
  }
  EXPECT_FALSE(p->node("fc")->quantized);
  EXPECT_EQ(p->node("fc")->reason, "op type Gemm is not among the op types to quantize");
  EXPECT_FALSE(p->node("gap")->quantized);  // pooling is not in the list either
  EXPECT_TRUE(p->warnings.empty());

  o.quantize_nodes = {"conv[23]"};  // within the op types: the nodes named
  o.exclude_nodes = {"conv3"};      // and exclusions still apply
  p = plan(b.model, b.table(), o);
  ASSERT_TRUE(p.has_value()) << p.status().message();
  EXPECT_FALSE(p->node("conv1")->quantized);
  EXPECT_EQ(p->node("conv1")->reason, "not among the nodes to quantize");
  EXPECT_TRUE(p->node("conv2")->quantized);
  EXPECT_FALSE(p->node("conv3")->quantized);
  EXPECT_NE(p->node("conv3")->reason.find("excluded"), std::string::npos);

  const QuantizeResult r = quantize_ok(b.model, b.table(), o);
  EXPECT_EQ(dq_at(b.model, "conv1", 0), nullptr);
  EXPECT_NE(dq_at(b.model, "conv2", 1), nullptr);
  EXPECT_EQ(*b.model.metadata("ptqkit.excluded_nodes"), "conv3");  // only explicit exclusions
  std::map<std::string, std::string> float_reasons;
  for (const NodePlan& n : r.float_nodes) float_reasons[n.name] = n.reason;
  EXPECT_EQ(float_reasons["conv1"], "not among the nodes to quantize");
  EXPECT_EQ(float_reasons["conv3"], "excluded by node pattern 'conv3'");
  EXPECT_EQ(float_reasons.count("conv2"), 0u);
  ASSERT_EQ(r.activations.size(), 1u);  // conv2's input
  EXPECT_EQ(r.activations[0].tensor, "r1");
  EXPECT_FLOAT_EQ(r.activations[0].scale, static_cast<float>(r.activations[0].range.amax / 127.0));
  EXPECT_EQ(r.activations[0].zero_point, 0);
}

TEST(Options, QuantizeNodesNamingNothingIsAnErrorAndAbsentOpTypesAWarning) {
  Builder b = chain();
  PlanOptions o;
  o.quantize_nodes = {"cnv2"};
  auto p = plan(b.model, b.table(), o);
  ASSERT_FALSE(p.has_value());
  EXPECT_EQ(p.status().code(), StatusCode::kUsage);
  EXPECT_EQ(p.status().message(),
            "node to quantize 'cnv2' matches no node name (did you mean 'conv2', 'conv1', "
            "'conv3'?)");
  PlanOptions t;
  t.quantize_op_types = {"Conv", "MatMul"};
  auto q = plan(b.model, b.table(), t);
  ASSERT_TRUE(q.has_value()) << q.status().message();
  ASSERT_EQ(q->warnings.size(), 1u);
  EXPECT_EQ(q->warnings[0].rfind("op type to quantize 'MatMul' is not in the model", 0), 0u)
      << q->warnings[0];
  EXPECT_TRUE(q->node("conv1")->quantized);
}

TEST(Options, TensorsWithoutRangeStayFloatAndAreListed) {
  Builder b = chain();
  auto r = quantize_ok(b.model, b.table({"r1"}));
  EXPECT_EQ(r.float_tensors, std::vector<std::string>{"r1"});
  EXPECT_EQ(dq_at(b.model, "conv2", 0), nullptr);
  EXPECT_EQ(dq_at(b.model, "conv2", 1), nullptr);  // no weight-only quantization
  EXPECT_NE(dq_at(b.model, "conv3", 0), nullptr);
  auto names = r.quantized_nodes;
  EXPECT_EQ(std::count(names.begin(), names.end(), "conv2"), 0);
}

TEST(Options, UnitsCanBeQuantizedOneAtATime) {
  Builder b = chain();
  auto full = plan(b.model, b.table(), {});
  ASSERT_TRUE(full.has_value());
  std::vector<std::string> names;
  for (const Unit& u : full->units) names.push_back(u.name);
  EXPECT_EQ(names, (std::vector<std::string>{"conv1", "conv2", "conv3", "fc", "gap"}));
  EXPECT_EQ(full->unit("conv2")->tensors, (std::vector<std::string>{"conv2.weight", "r1"}));

  PlanOptions only;
  only.only_units = {"conv2"};
  quantize_ok(b.model, b.table(), only);
  EXPECT_EQ(count_op(b.model, "QuantizeLinear"), 1);
  EXPECT_EQ(count_op(b.model, "DequantizeLinear"), 2);
  EXPECT_EQ(quantized_source(b.model, "conv2", 0), "r1");

  Builder c = chain();
  PlanOptions skip;
  skip.skip_units = {"conv2", "gap"};
  auto p = plan(c.model, c.table(), skip);
  ASSERT_TRUE(p.has_value());
  EXPECT_FALSE(p->node("conv2")->quantized);
  EXPECT_TRUE(p->node("conv3")->quantized);
  EXPECT_FALSE(p->node("gap")->quantized);
}

void expect_same_plan(const Plan& a, const Plan& b) {
  ASSERT_EQ(a.edges.size(), b.edges.size());
  for (size_t i = 0; i < a.edges.size(); ++i) {
    const QuantEdge &x = a.edges[i], &y = b.edges[i];
    EXPECT_EQ(std::tie(x.node, x.input, x.tensor, x.role, x.axis, x.units),
              std::tie(y.node, y.input, y.tensor, y.role, y.axis, y.units));
  }
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].quantized, b.nodes[i].quantized) << a.nodes[i].name;
    EXPECT_EQ(a.nodes[i].reason, b.nodes[i].reason) << a.nodes[i].name;
  }
  ASSERT_EQ(a.units.size(), b.units.size());
  for (size_t i = 0; i < a.units.size(); ++i) EXPECT_EQ(a.units[i].tensors, b.units[i].tensors);
  ASSERT_EQ(a.groups.size(), b.groups.size());
  for (size_t i = 0; i < a.groups.size(); ++i) {
    EXPECT_EQ(a.groups[i].name, b.groups[i].name);
    EXPECT_EQ(a.groups[i].range.amax, b.groups[i].range.amax);
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) EXPECT_EQ(a.tensors[i].name, b.tensors[i].name);
  EXPECT_EQ(a.folds.size(), b.folds.size());
  EXPECT_EQ(a.float_tensors, b.float_tensors);
  EXPECT_EQ(a.options.only_units, b.options.only_units);
  EXPECT_EQ(a.options.skip_units, b.options.skip_units);
}

// A Planner analyses once and selects per call: each selection must plan as plan() does,
// including a unit left float for want of a range (r1) and an exclusion (fc).
TEST(Options, PlannerSelectsUnitsAsPlanDoes) {
  Builder b = chain();
  const calib::CalibrationTable table = b.table({"r1"});
  PlanOptions base;
  base.exclude_op_types = {"Gemm"};
  auto planner = Planner::create(b.model, table, base);
  ASSERT_TRUE(planner.has_value()) << planner.status().message();
  const std::vector<std::string> names = {"conv1", "conv2", "conv3", "fc", "gap"};
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> selections = {
      {{}, {}}};
  for (const std::string& n : names) {
    selections.push_back({{n}, {}});
    selections.push_back({{}, {n}});
  }
  selections.push_back({{"conv2", "conv3"}, {"conv3"}});
  for (const auto& [only, skip] : selections) {
    PlanOptions o = base;
    o.only_units = only;
    o.skip_units = skip;
    auto want = plan(b.model, table, o);
    auto got = planner->plan(only, skip);
    SCOPED_TRACE(::testing::PrintToString(only) + " / " + ::testing::PrintToString(skip));
    ASSERT_EQ(want.has_value(), got.has_value());
    if (want.has_value()) {
      expect_same_plan(*got, *want);
    } else {
      EXPECT_EQ(got.status().message(), want.status().message());
    }
  }
  auto bad = planner->plan({"conv9"}, {});
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("did you mean"), std::string::npos);
}

TEST(Options, QuantizableActivationsIncludeGroups) {
  Builder b = chain();
  auto acts = quantizable_activations(b.model, {});
  ASSERT_TRUE(acts.has_value());
  EXPECT_EQ(*acts, (std::vector<std::string>{"f", "g", "r1", "r2", "r3", "x"}));
}

TEST(Options, AlreadyQuantizedModelIsRefusedUnlessRequantize) {
  Builder b = chain();
  const auto table = b.table();
  quantize_ok(b.model, table);
  const int q = count_op(b.model, "QuantizeLinear");
  const int dq = count_op(b.model, "DequantizeLinear");
  auto again = plan(b.model, table, {});
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.status().message().find("already quantized"), std::string::npos);

  PlanOptions o;
  o.requantize = true;
  auto r = quantize(b.model, table, o);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_EQ(count_op(b.model, "QuantizeLinear"), q);
  EXPECT_EQ(count_op(b.model, "DequantizeLinear"), dq);
  ASSERT_TRUE(ir::topological_order(b.model.graph).has_value());
}

TEST(Options, OldOpsetIsRaisedOrRefused) {
  Builder b = chain();
  b.model.set_opset("", 11);
  quantize_ok(b.model, b.table());
  EXPECT_EQ(b.model.opset(), 13);

  Builder c = chain();
  c.model.set_opset("", 11);
  c.node("Softmax", "softmax", {"y"}, {"prob"});
  auto p = plan(c.model, c.table(), {});
  ASSERT_FALSE(p.has_value());
  EXPECT_NE(p.status().message().find("Softmax node 'softmax'"), std::string::npos);
}

// ---- ONNX Runtime target -----------------------------------------------------------------

//   x ─► conv1 ─► relu1 ─► conv2 ─► add(x) ─► y
TEST(Ort, OutputsBiasAndAdd) {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  b.conv("conv1", "x", "c1", 16, 16);
  b.node("Relu", "relu1", {"c1"}, {"r1"});
  b.conv("conv2", "r1", "c2", 16, 16);
  b.node("Add", "add", {"c2", "x"}, {"s"});
  b.node("Relu", "relu2", {"s"}, {"y"});
  b.output("y");
  const auto table = b.table();
  PlanOptions o;
  o.target = Target::kOrt;
  quantize_ok(b.model, table, o);
  const ir::Model& m = b.model;
  // Activations: x, c1 (conv1 output), r1 (Relu passes it on), c2, s (Add output).
  EXPECT_EQ(count_op(m, "QuantizeLinear"), 5);
  EXPECT_EQ(quantized_source(m, "relu1", 0), "c1");
  EXPECT_EQ(quantized_source(m, "conv2", 0), "r1");
  EXPECT_EQ(quantized_source(m, "add", 0), "c2");
  EXPECT_EQ(quantized_source(m, "add", 1), "x");
  EXPECT_EQ(quantized_source(m, "relu2", 0), "s");
  EXPECT_EQ(producer_of(m, "y")->op_type, "Relu");  // graph output stays float
  // int32 bias, scale = s_in * s_w per channel, zero point 0, axis 0.
  const ir::Node* bdq = dq_at(m, "conv1", 2);
  ASSERT_NE(bdq, nullptr);
  EXPECT_EQ(m.graph.initializer(bdq->inputs[0])->dtype(), ir::DType::kInt32);
  EXPECT_EQ(bdq->attr_int("axis", -1), 0);
  const ir::Tensor& bs = *m.graph.initializer(bdq->inputs[1]);
  const ir::Tensor& ws = *m.graph.initializer(dq_at(m, "conv1", 1)->inputs[1]);
  const float sx = static_cast<float>(table.find("x")->amax / 127.0);
  for (int64_t c = 0; c < 16; ++c) EXPECT_EQ(bs.data<float>()[c], sx * ws.data<float>()[c]);
}

//   x ─► conv (tiny weights, huge bias) ─► y
TEST(Ort, Int32BiasOverflowWidensWeightScale) {
  Builder b;
  b.input("x", {1, 16, 4, 4});
  b.conv("conv", "x", "y", 16, 16);
  b.output("y");
  for (float& v : b.g().mutable_initializer("conv.weight")->span<float>()) v *= 1e-4f;
  for (float& v : b.g().mutable_initializer("conv.bias")->span<float>()) v = 1e-5f;
  b.g().mutable_initializer("conv.bias")->data<float>()[5] = 3.0e6f;
  calib::CalibrationTable t = b.table();
  t.tensors["x"].amax = 1e-3;
  const ir::Tensor w = *b.g().initializer("conv.weight");
  PlanOptions o;
  o.target = Target::kOrt;
  auto r = quantize_ok(b.model, t, o);
  ASSERT_FALSE(r.warnings.empty());
  const ir::Model& m = b.model;
  const ir::Node* wdq = dq_at(m, "conv", 1);
  const ir::Tensor& ws = *m.graph.initializer(wdq->inputs[1]);
  const auto plain = weight_scales(w, 0);
  EXPECT_GT(ws.data<float>()[5], plain[5]);   // widened
  EXPECT_EQ(ws.data<float>()[4], plain[4]);   // others untouched
  const double s_in = double(static_cast<float>(1e-3 / 127.0));
  EXPECT_LE(3.0e6 / (s_in * double(ws.data<float>()[5])), 2147483647.0);
  // Channel 5 is requantized with the widened scale.
  std::vector<float> s5(ws.span<float>().begin(), ws.span<float>().end());
  ir::Tensor ref = quantize_weights(w, 0, s5);
  const ir::Tensor& q = *m.graph.initializer(wdq->inputs[0]);
  EXPECT_TRUE(
      std::equal(q.span<int8_t>().begin(), q.span<int8_t>().end(), ref.span<int8_t>().begin()));
  const ir::Tensor& qb = *m.graph.initializer(dq_at(m, "conv", 2)->inputs[0]);
  EXPECT_GT(qb.data<int32_t>()[5], 2000000000);
}

TEST(Ort, Uint8ActivationsAreAsymmetric) {
  Builder b;
  b.input("x", {1, 16, 4, 4});
  b.conv("conv", "x", "y", 16, 16);
  b.output("y");
  calib::CalibrationTable t = b.table();
  t.tensors["x"].min = -1.0;
  t.tensors["x"].max = 3.0;
  t.tensors["x"].amax = 3.0;
  PlanOptions o;
  o.target = Target::kOrt;
  o.activation_type = ActivationType::kUInt8;
  quantize_ok(b.model, t, o);
  const ir::Node* dq = dq_at(b.model, "conv", 0);
  ASSERT_NE(dq, nullptr);
  EXPECT_FLOAT_EQ(scalar(b.model, dq->inputs[1]), 4.0f / 255.0f);
  EXPECT_EQ(b.model.graph.initializer(dq->inputs[2])->dtype(), ir::DType::kUInt8);
  EXPECT_EQ(scalar(b.model, dq->inputs[2]), 64.0f);  // round(1 / (4/255)) = 64
}

}  // namespace
}  // namespace ptq::planner::testing

namespace ptq::planner::testing {
namespace {

//   x ─► MatMul Wq ─► q ─┐
//   x ─► MatMul Wk ─► k ─► MatMul ─► s ─► Div ─► Softmax ─► y
TEST(Ort, NoOutputQdqOnTensorsFeedingOnlySoftmax) {
  Builder b;
  b.input("x", {1, 8, 32});
  b.node("MatMul", "mq", {"x", b.weight("Wq", {32, 32})}, {"q"});
  b.node("MatMul", "mk", {"x", b.weight("Wk", {32, 8})}, {"k"});
  b.node("MatMul", "scores", {"q", "k"}, {"s"});
  b.g().set_initializer("d", ir::make_tensor<float>({}, {4.0f}));
  b.node("Div", "div", {"s", "d"}, {"sd"});
  b.node("Softmax", "softmax", {"sd"}, {"y"});
  b.output("y");
  b.shape("q", {1, 8, 32});
  b.shape("k", {1, 32, 8});
  PlanOptions o;
  o.target = Target::kOrt;
  Builder c = b;
  quantize_ok(b.model, b.table(), o);
  EXPECT_EQ(dq_at(b.model, "div", 0), nullptr);
  EXPECT_EQ(quantized_source(b.model, "scores", 0), "q");
  EXPECT_EQ(count_op(b.model, "QuantizeLinear"), 3);  // x, q, k

  o.quantize_float_sensitive = true;
  quantize_ok(c.model, c.table(), o);
  EXPECT_EQ(quantized_source(c.model, "div", 0), "s");
}

}  // namespace
}  // namespace ptq::planner::testing
