// Each lint rule fires on a small graph built to break it, and only that rule (or the rules
// the same mistake breaks); clean graphs give no finding.
#include <gtest/gtest.h>

#include "qdq_builder.h"

namespace ptq::report {
namespace {

using testing::QdqBuilder;
using testing::rules_of;
using Rules = std::set<std::string>;

std::vector<Finding> lint_of(const QdqBuilder& b) { return lint(b.model); }

#define EXPECT_RULES(b, ...)                                                \
  do {                                                                      \
    const std::vector<Finding> f_ = lint_of(b);                             \
    EXPECT_EQ(rules_of(f_), (Rules{__VA_ARGS__})) << testing::describe(f_); \
  } while (0)

TEST(Lint, CatalogueNamesEveryRuleOnce) {
  std::set<std::string> ids;
  for (const RuleInfo& r : lint_rules()) EXPECT_TRUE(ids.insert(std::string(r.id)).second) << r.id;
  EXPECT_EQ(ids.size(), 12u);
}

TEST(Lint, FloatModelHasNoFindings) {
  auto b = planner::testing::resnet_block();
  EXPECT_TRUE(lint(b.model).empty()) << findings_text(lint(b.model));
}

TEST(Lint, PlannerOutputOfResidualBlockIsClean) {
  auto b = planner::testing::resnet_block();
  planner::testing::quantize_ok(b.model, b.table());
  EXPECT_TRUE(lint(b.model).empty()) << findings_text(lint(b.model));
}

TEST(Lint, PlannerOutputOfChainWithPoolIsClean) {
  auto b = planner::testing::chain();
  planner::testing::quantize_ok(b.model, b.table());
  EXPECT_TRUE(lint(b.model).empty()) << findings_text(lint(b.model));
}

//   x (float) ─► conv1 ◄─ DQ ◄─ w1 (int8)
//                  └─► y
TEST(Lint, UnquantizedActivation) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", "x", b.qweight("w1", {16, 16, 3, 3}), "y", 16);
  b.output("y");
  const auto f = lint(b.model);
  EXPECT_RULES(b, "unquantized-activation");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].severity, Severity::kError);
  EXPECT_EQ(f[0].node, "conv1");
  EXPECT_EQ(f[0].tensor, "x");
  EXPECT_FALSE(f[0].fix.empty());
}

//   x ─► Q ─► DQ ─► conv1 ◄─ w1 (float)
TEST(Lint, UnquantizedWeight) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", b.qdq("x"), b.weight("w1", {16, 16, 3, 3}), "y", 16);
  b.output("y");
  EXPECT_RULES(b, "unquantized-weight");
}

//   x ─► Q/DQ ─► conv1 ◄─ DQ(w1) ─► c1 ─► relu ─► r1 ─► conv2 ◄─ DQ(w2) ─► y
//                (INT8)                               (reads r1 in float: no Q after conv1)
TEST(Lint, MissingOutputQ) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", b.qdq("x"), b.qweight("w1", {16, 16, 3, 3}), "c1", 16);
  b.node("Relu", "relu1", {"c1"}, {"r1"});
  b.conv_with("conv2", "r1", b.qweight("w2", {16, 16, 3, 3}), "y", 16);
  b.output("y");
  // The same missing Q seen from both ends: conv2 reads a float activation.
  EXPECT_RULES(b, "missing-output-q", "unquantized-activation");
  for (const Finding& f : lint(b.model)) {
    if (f.rule == "missing-output-q") {
      EXPECT_EQ(f.node, "conv1");
      EXPECT_EQ(f.tensor, "r1");  // after the fused Relu
    }
  }
}

//   x ─► Q/DQ ─► conv1 ◄─ DQ(w) ─► c1 ─► add ─► y
//   │                                    ▲
//   └──────────── skip (float) ──────────┘
TEST(Lint, ResidualSkipFloat) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", b.qdq("x"), b.qweight("w1", {16, 16, 3, 3}), "c1", 16);
  b.node("Add", "add", {"c1", "x"}, {"y"});
  b.output("y");
  const auto f = lint(b.model);
  EXPECT_RULES(b, "residual-skip-float");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].node, "add");
  EXPECT_EQ(f[0].tensor, "x");
}

//   the same with the skip quantized: TensorRT fuses the Add into conv1 — no finding
TEST(Lint, ResidualSkipQuantizedIsClean) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  const std::string xq = b.qdq("x");
  b.conv_with("conv1", xq, b.qweight("w1", {16, 16, 3, 3}), "c1", 16);
  b.node("Add", "add", {"c1", xq}, {"y"});
  b.output("y");
  EXPECT_RULES(b);
}

//   x ─► Q/DQ ─► conv1 ◄─ DQ ─► relu ─► MaxPool (float) ─► Q/DQ ─► conv2 ◄─ DQ ─► y
TEST(Lint, FloatPoolBetweenInt8Layers) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", b.qdq("x"), b.qweight("w1", {16, 16, 3, 3}), "c1", 16);
  b.node("Relu", "relu1", {"c1"}, {"r1"});
  ir::Node& pool = b.node("MaxPool", "pool", {"r1"}, {"p"});
  planner::testing::Builder::set_ints(pool, "kernel_shape", {2, 2});
  b.conv_with("conv2", b.qdq("p"), b.qweight("w2", {16, 16, 3, 3}), "y", 16);
  b.output("y");
  EXPECT_RULES(b, "float-pool");
}

//   a ─► Q/DQ (scale 0.02) ─┐
//                           ├─► Concat ─► c ─► Q/DQ ─► conv ◄─ DQ(w) ─► y
//   b ─► Q/DQ (scale 0.05) ─┘
TEST(Lint, ConcatWithDifferentScales) {
  QdqBuilder b;
  b.input("a", {1, 8, 8, 8});
  b.input("b", {1, 8, 8, 8});
  ir::Node& cat = b.node("Concat", "cat", {b.qdq("a", 0.02f), b.qdq("b", 0.05f)}, {"c"});
  planner::testing::Builder::set_int(cat, "axis", 1);
  b.conv_with("conv", b.qdq("c"), b.qweight("w", {16, 16, 3, 3}), "y", 16);
  b.output("y");
  EXPECT_RULES(b, "concat-scales");
}

//   as above with one scale on both inputs: no finding; with input b float: a finding
TEST(Lint, ConcatSameScaleIsCleanMixedIsNot) {
  for (bool mixed : {false, true}) {
    QdqBuilder b;
    b.input("a", {1, 8, 8, 8});
    b.input("b", {1, 8, 8, 8});
    ir::Node& cat =
        b.node("Concat", "cat", {b.qdq("a", 0.02f), mixed ? "b" : b.qdq("b", 0.02f)}, {"c"});
    planner::testing::Builder::set_int(cat, "axis", 1);
    b.conv_with("conv", b.qdq("c"), b.qweight("w", {16, 16, 3, 3}), "y", 16);
    b.output("y");
    if (mixed) {
      EXPECT_RULES(b, "concat-scales");
    } else {
      EXPECT_RULES(b);
    }
  }
}

//   x ─► Q/DQ ─► conv1 ◄─ DQ (16 scales, no axis attribute) ◄─ w1 int8
TEST(Lint, PerChannelWithoutAxis) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", b.qdq("x"), b.qweight("w1", {16, 16, 3, 3}, 0, false), "y", 16);
  b.output("y");
  const auto f = lint(b.model);
  EXPECT_RULES(b, "missing-axis");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].node, "w1_DQ");
}

//   x ─► Q/DQ (uint8, zp 128) ─► conv1 ◄─ DQ(w1)        and the same with int8 zp 3
TEST(Lint, ZeroPoints) {
  for (ir::DType type : {ir::DType::kUInt8, ir::DType::kInt8}) {
    QdqBuilder b;
    b.input("x", {1, 16, 8, 8});
    const int zp = type == ir::DType::kUInt8 ? 128 : 3;
    b.conv_with("conv1", b.qdq("x", 0.02f, zp, type), b.qweight("w1", {16, 16, 3, 3}), "y", 16);
    b.output("y");
    const auto f = lint(b.model);
    EXPECT_RULES(b, "zero-point");
    ASSERT_EQ(f.size(), 1u) << "reported once per Q/DQ pair";
    EXPECT_EQ(f[0].node, "x_Q");
  }
}

//   x ─► Q/DQ ─► conv1 ◄─ DQ(w1), bias: int32 ─► DQ ─► conv1
TEST(Lint, QdqOnBias) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.g().set_initializer("b_int32", ir::make_tensor<int32_t>({16}, std::vector<int32_t>(16, 7)));
  b.g().set_initializer("b_s", ir::make_tensor<float>({16}, std::vector<float>(16, 1e-4f)));
  b.g().set_initializer("b_z", ir::Tensor(ir::DType::kInt32, {16}));
  ir::Node& bdq = b.node("DequantizeLinear", "bias_DQ", {"b_int32", "b_s", "b_z"}, {"b_dq"});
  planner::testing::Builder::set_int(bdq, "axis", 0);
  ir::Node& conv =
      b.node("Conv", "conv1", {b.qdq("x"), b.qweight("w1", {16, 16, 3, 3}), "b_dq"}, {"y"});
  planner::testing::Builder::set_ints(conv, "pads", {1, 1, 1, 1});
  b.output("y");
  EXPECT_RULES(b, "bias-qdq");
}

//   x ─► Q/DQ ─► conv1 ◄─ DQ(w1) ─► c ─► Q ─► DQ ─► y (graph output)
TEST(Lint, QdqOnGraphOutput) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", b.qdq("x"), b.qweight("w1", {16, 16, 3, 3}), "c", 16);
  b.output(b.qdq("c"));
  const auto f = lint(b.model);
  EXPECT_RULES(b, "output-qdq");
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].tensor, "c_dq");
}

//   x [1,3,8,8] ─► Q/DQ ─► conv1 (3 input channels) ◄─ DQ(w1) ─► y
TEST(Lint, SmallConvQuantized) {
  QdqBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.conv_with("conv1", b.qdq("x"), b.qweight("w1", {16, 3, 3, 3}), "y", 16);
  b.output("y");
  EXPECT_RULES(b, "small-conv");
  LintOptions off;
  off.min_conv_channels = 0;
  EXPECT_TRUE(lint(b.model, off).empty());
}

//   x [1, 64] ─► Q/DQ ─► MatMul ◄─ DQ(w [64, 32] int8, axis 1) ─► y     (M = 1)
TEST(Lint, MatrixVectorMatMulQuantized) {
  QdqBuilder b;
  b.input("x", {1, 64});
  b.node("MatMul", "mm", {b.qdq("x"), b.qweight("w", {64, 32}, 1)}, {"y"});
  b.output("y");
  EXPECT_RULES(b, "matrix-vector");
  // The same with x [8, 64] is a real matrix product.
  QdqBuilder m;
  m.input("x", {8, 64});
  m.node("MatMul", "mm", {m.qdq("x"), m.qweight("w", {64, 32}, 1)}, {"y"});
  m.output("y");
  EXPECT_RULES(m);
}

TEST(Lint, DisabledRulesDoNotRun) {
  QdqBuilder b;
  b.input("x", {1, 3, 8, 8});
  b.conv_with("conv1", b.qdq("x"), b.qweight("w1", {16, 3, 3, 3}), "y", 16);
  b.output("y");
  LintOptions o;
  o.disabled_rules = {"small-conv"};
  EXPECT_TRUE(lint(b.model, o).empty());
}

TEST(Lint, JsonAndTextOutput) {
  QdqBuilder b;
  b.input("x", {1, 16, 8, 8});
  b.conv_with("conv1", "x", b.qweight("w1", {16, 16, 3, 3}), "y", 16);
  b.output("y");
  const auto f = lint(b.model);
  const std::string json = findings_json(f);
  EXPECT_NE(json.find("\"rule\": \"unquantized-activation\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"error\": 1"), std::string::npos) << json;
  const std::string text = findings_text(f);
  EXPECT_NE(text.find("conv1"), std::string::npos);
  EXPECT_NE(text.find("1 error(s), 0 warning(s)"), std::string::npos) << text;
  EXPECT_EQ(findings_text({}), "no findings\n");
}

}  // namespace
}  // namespace ptq::report
