// Weight handling: arithmetic against float64 references, BN folding, shared and Constant-node
// weights, per-tensor weights.
#include <algorithm>

#include "builder.h"

namespace ptq::planner::testing {
namespace {

double round_half_even(double x) {
  const double f = std::floor(x);
  const double d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return std::fmod(f, 2.0) == 0.0 ? f : f + 1;
}

TEST(Arithmetic, PerChannelScalesAndRounding) {
  Builder b(11);
  ir::Tensor w = b.random_tensor({4, 3, 2, 2}, 1.0f);
  for (int64_t i = 12; i < 24; ++i) w.data<float>()[i] = 0.0f;  // channel 1 all zero
  auto scales = weight_scales(w, 0);
  ASSERT_EQ(scales.size(), 4u);
  EXPECT_EQ(scales[1], 1.0f);
  for (int64_t c = 0; c < 4; ++c) {
    if (c == 1) continue;
    double amax = 0;
    for (int64_t i = 0; i < 12; ++i)
      amax = std::max(amax, std::fabs(double(w.data<float>()[c * 12 + i])));
    EXPECT_EQ(scales[size_t(c)], static_cast<float>(amax / 127.0));
  }
  ir::Tensor q = quantize_weights(w, 0, scales);
  for (int64_t i = 0; i < w.size(); ++i) {
    const double ref = std::clamp(
        round_half_even(double(w.data<float>()[i]) / scales[size_t(i / 12)]), -127.0, 127.0);
    EXPECT_EQ(q.data<int8_t>()[i], static_cast<int8_t>(ref)) << i;
  }
  // Ties go to even; the extremes reach ±127, never -128.
  ir::Tensor t = ir::make_tensor<float>({6}, {0.5f, 1.5f, 2.5f, -2.5f, 127.0f, -127.0f});
  std::vector<float> one = {1.0f};
  ir::Tensor qt = quantize_weights(t, -1, one);
  EXPECT_EQ(std::vector<int8_t>(qt.span<int8_t>().begin(), qt.span<int8_t>().end()),
            (std::vector<int8_t>{0, 2, 2, -2, 127, -127}));
  EXPECT_EQ(weight_scales(t, -1), std::vector<float>{1.0f});
}

TEST(Arithmetic, BiasWideningKeepsInt32) {
  std::vector<float> bias = {1.0e6f, -0.003f, 2.0e7f};
  std::vector<float> ws = {1e-4f, 1e-4f, 1e-4f};
  const float in_scale = 1e-5f;
  EXPECT_EQ(widen_scales_for_bias(bias, in_scale, ws), 2);
  EXPECT_EQ(ws[1], 1e-4f);  // small bias: untouched
  std::vector<float> bs;
  ir::Tensor q = quantize_bias(ir::make_tensor<float>({3}, bias), in_scale, ws, bs);
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(bs[size_t(c)], in_scale * ws[size_t(c)]);
    const double ref = double(bias[size_t(c)]) / double(bs[size_t(c)]);
    EXPECT_LE(std::fabs(ref), 2147483647.0);
    EXPECT_NEAR(double(q.data<int32_t>()[c]), ref, 0.5 + 1e-9 * std::fabs(ref));
  }
}

//   x ─► conv (W, b) ─► bn ─► y
TEST(Weights, BatchNormFoldingMatchesFloat64) {
  Builder b(3);
  b.input("x", {1, 16, 4, 4});
  b.conv("conv", "x", "c", 16, 16);
  b.batchnorm("bn", "c", "y", 16);
  b.output("y");
  const ir::Graph before = b.g();
  PlanOptions o;
  o.weights_float = true;  // keep the folded float weights to compare them
  quantize_ok(b.model, b.table(), o);
  const ir::Model& m = b.model;
  EXPECT_EQ(count_op(m, "BatchNormalization"), 0);
  const ir::Node* conv = find_node(m, "conv");
  EXPECT_EQ(conv->outputs[0], "y");
  const std::string wname = quantized_source(m, "conv", 1);
  const ir::Tensor& w = *m.graph.initializer(wname);
  const ir::Tensor& bias = *m.graph.initializer(conv->inputs[2]);
  const ir::Tensor& w0 = *before.initializer("conv.weight");
  const ir::Tensor& b0 = *before.initializer("conv.bias");
  auto p = [&](const char* n, int64_t c) {
    return double(before.initializer(n)->data<float>()[c]);
  };
  const int64_t inner = w0.size() / 16;
  for (int64_t c = 0; c < 16; ++c) {
    const double f = p("bn.gamma", c) / std::sqrt(p("bn.var", c) + 1e-5);
    for (int64_t i = 0; i < inner; ++i) {
      const double ref = double(w0.data<float>()[c * inner + i]) * f;
      EXPECT_NEAR(w.data<float>()[c * inner + i], ref, 1e-6 * std::max(1.0, std::fabs(ref)));
    }
    const double bref = (double(b0.data<float>()[c]) - p("bn.mean", c)) * f + p("bn.beta", c);
    EXPECT_NEAR(bias.data<float>()[c], bref, 1e-6 * std::max(1.0, std::fabs(bref)));
  }
  // Quantized with the folded weights' own per-channel scales.
  const ir::Node* dq = dq_at(m, "conv", 1);
  EXPECT_EQ(producer_of(m, dq->inputs[0])->op_type, "QuantizeLinear");
  EXPECT_EQ(m.graph.initializer(dq->inputs[1])->span<float>()[3], weight_scales(w, 0)[3]);
}

//   x ─► convA(W) ─► relu ─► convB(W) ─► y      (one weight, two readers)
TEST(Weights, SharedByTwoConvs) {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  const std::string w = b.weight("W", {16, 16, 3, 3});
  b.node("Conv", "convA", {"x", w}, {"a"});
  b.node("Relu", "relu", {"a"}, {"r"});
  b.node("Conv", "convB", {"r", w}, {"y"});
  b.output("y");
  const ir::Tensor original = *b.g().initializer("W");
  quantize_ok(b.model, b.table());
  const ir::Model& m = b.model;
  EXPECT_EQ(count_op(m, "DequantizeLinear"), 3);  // x, r, W once
  EXPECT_EQ(dq_at(m, "convA", 1), dq_at(m, "convB", 1));
  EXPECT_EQ(m.graph.initializer("W"), nullptr);
  const ir::Tensor& q = *m.graph.initializer(dq_at(m, "convA", 1)->inputs[0]);
  auto scales = weight_scales(original, 0);
  ir::Tensor ref = quantize_weights(original, 0, scales);
  EXPECT_TRUE(
      std::equal(q.span<int8_t>().begin(), q.span<int8_t>().end(), ref.span<int8_t>().begin()));
}

// A copy of `m` whose initializers are views of m's (as a sensitivity sweep's variants are).
ir::Model borrowing(const ir::Model& m) {
  ir::Model copy = m;
  for (size_t i = 0; i < copy.graph.initializers().size(); ++i) {
    copy.graph.mutable_initializers()[i].tensor = m.graph.initializers()[i].tensor.view();
  }
  return copy;
}

// What the memo tests compare with: the model quantized without a memo, and its plan.
struct Planned {
  ir::Model plain;
  Plan plan;
};

Planned planned(const ir::Model& m, const calib::CalibrationTable& table) {
  Planned out{m, {}};
  quantize_ok(out.plain, table);
  auto p = plan(m, table, {});
  EXPECT_TRUE(p.has_value()) << p.status().message();
  if (p) out.plan = std::move(*p);
  return out;
}

// With a memo, copies of one model get the int8 weights apply() makes without one, and a weight
// of that model is quantized once: every copy holds a view of the same tensor. A weight that a
// BatchNormalization folds into is a new tensor per copy, quantized per copy.
TEST(Weights, MemoQuantizesTheSourceModelsWeightsOnce) {
  for (const bool with_bn : {false, true}) {
    Builder b = with_bn ? resnet_block() : chain();
    const auto [plain, p] = planned(b.model, b.table());
    WeightMemo memo(b.model);
    ir::Model first = borrowing(b.model), second = borrowing(b.model);
    ASSERT_TRUE(apply(first, p, &memo).has_value());
    ASSERT_TRUE(apply(second, p, &memo).has_value());
    int int8_weights = 0;
    for (const ir::Initializer& i : plain.graph.initializers()) {
      if (i.tensor.dtype() != ir::DType::kInt8 || !i.name.ends_with("_quantized")) continue;
      ++int8_weights;
      const ir::Tensor* a = first.graph.initializer(i.name);
      const ir::Tensor* c = second.graph.initializer(i.name);
      ASSERT_TRUE(a != nullptr && c != nullptr) << i.name;
      const auto want = i.tensor.span<int8_t>();
      EXPECT_TRUE(std::equal(want.begin(), want.end(), a->span<int8_t>().begin())) << i.name;
      EXPECT_TRUE(std::equal(want.begin(), want.end(), c->span<int8_t>().begin())) << i.name;
      EXPECT_EQ(a->raw() == c->raw(), !with_bn) << i.name;  // shared unless folded per copy
    }
    EXPECT_EQ(int8_weights, with_bn ? 2 : 4);
  }
}

// apply() with a memo takes the source's names from the memo instead of collecting the copy's:
// a copy of the source gets the names apply() gives without one, and a name only the copy
// holds (an initializer named like the Q output apply() would make) is still avoided.
TEST(Weights, MemoNamesMatchApplysAndAvoidTheCopysOwn) {
  Builder b = chain();
  const auto [plain, p] = planned(b.model, b.table());
  WeightMemo memo(b.model);
  ir::Model copy = borrowing(b.model);
  ASSERT_TRUE(apply(copy, p, &memo).has_value());
  ASSERT_EQ(copy.graph.nodes.size(), plain.graph.nodes.size());
  for (size_t n = 0; n < plain.graph.nodes.size(); ++n) {
    EXPECT_EQ(copy.graph.nodes[n].name, plain.graph.nodes[n].name);
    EXPECT_EQ(copy.graph.nodes[n].inputs, plain.graph.nodes[n].inputs);
    EXPECT_EQ(copy.graph.nodes[n].outputs, plain.graph.nodes[n].outputs);
  }
  const auto q = std::find_if(plain.graph.nodes.begin(), plain.graph.nodes.end(),
                              [](const ir::Node& n) { return n.op_type == "QuantizeLinear"; });
  ASSERT_NE(q, plain.graph.nodes.end());
  const std::string taken = q->outputs.front();
  ir::Model own = borrowing(b.model);
  own.graph.set_initializer(taken, ir::make_tensor<float>({}, {1.0f}));
  ASSERT_TRUE(apply(own, p, &memo).has_value());
  EXPECT_EQ(count_op(own, "QuantizeLinear"), count_op(plain, "QuantizeLinear"));
  for (const ir::Node& n : own.graph.nodes) EXPECT_NE(n.outputs.front(), taken) << n.name;
}

// A weight replaced by its int8 copy leaves no trace: not an initializer, not a graph input
// (IR < 4 lists initializers as inputs), no declaration; the real input stays.
TEST(Weights, ReplacedWeightLeavesNoDeclarations) {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  const std::string w = b.weight("W", {16, 16, 3, 3});
  b.node("Conv", "conv", {"x", w}, {"y"});
  b.output("y");
  const auto table = b.table();
  ir::ValueInfo declared;
  declared.name = w;
  declared.type.dtype = ir::DType::kFloat32;
  b.g().inputs.push_back(declared);
  b.g().value_info.push_back(declared);
  b.g().inferred.push_back(declared);
  quantize_ok(b.model, table);
  const ir::Graph& g = b.model.graph;
  EXPECT_EQ(g.initializer(w), nullptr);
  auto named = [&](const std::vector<ir::ValueInfo>& list, const std::string& name) {
    return std::count_if(list.begin(), list.end(),
                         [&](const ir::ValueInfo& v) { return v.name == name; });
  };
  EXPECT_EQ(named(g.inputs, w), 0);
  EXPECT_EQ(named(g.value_info, w), 0);
  EXPECT_EQ(named(g.inferred, w), 0);
  EXPECT_EQ(named(g.inputs, "x"), 1);
  EXPECT_EQ(count_op(b.model, "DequantizeLinear"), 2);  // x and W
}

//   x ─► conv (W from a Constant node) ─► bn ─► y
TEST(Weights, FromConstantNodes) {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  b.constant_node("W", {32, 16, 3, 3});
  b.constant_node("B", {32}, 0.1f);
  b.node("Conv", "conv", {"x", "W", "B"}, {"c"});
  b.batchnorm("bn", "c", "y", 32);
  b.output("y");
  auto r = quantize_ok(b.model, b.table());
  const ir::Model& m = b.model;
  EXPECT_EQ(r.folded_batchnorms, 1);
  EXPECT_EQ(count_op(m, "Constant"), 0);  // folded, then stored as int8 initializers
  const ir::Node* dq = dq_at(m, "conv", 1);
  ASSERT_NE(dq, nullptr);
  EXPECT_EQ(m.graph.initializer(dq->inputs[0])->dtype(), ir::DType::kInt8);
  EXPECT_EQ(m.graph.initializer(dq->inputs[0])->shape(), (ir::Shape{32, 16, 3, 3}));
  ASSERT_TRUE(ir::topological_order(m.graph).has_value());

  // Without a BN the Constant node is read directly and then removed.
  Builder c;
  c.input("x", {1, 16, 8, 8});
  c.constant_node("W", {32, 16, 3, 3});
  c.node("Conv", "conv", {"x", "W"}, {"y"});
  c.output("y");
  quantize_ok(c.model, c.table());
  EXPECT_EQ(count_op(c.model, "Constant"), 0);
  EXPECT_EQ(count_op(c.model, "DequantizeLinear"), 2);
}

TEST(Weights, PerTensorOption) {
  Builder b;
  b.input("x", {1, 16, 8, 8});
  b.conv("conv", "x", "y", 16, 8);
  b.output("y");
  const ir::Tensor w = *b.g().initializer("conv.weight");
  PlanOptions o;
  o.per_tensor_weights = true;
  quantize_ok(b.model, b.table(), o);
  const ir::Node* dq = dq_at(b.model, "conv", 1);
  ASSERT_NE(dq, nullptr);
  EXPECT_FALSE(dq->has_attr("axis"));
  const ir::Tensor& s = *b.model.graph.initializer(dq->inputs[1]);
  EXPECT_EQ(s.rank(), 0);
  double amax = 0;
  for (float v : w.span<float>()) amax = std::max(amax, std::fabs(double(v)));
  EXPECT_EQ(s.data<float>()[0], static_cast<float>(amax / 127.0));
}

}  // namespace
}  // namespace ptq::planner::testing
