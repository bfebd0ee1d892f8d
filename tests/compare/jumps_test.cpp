// The jump rule (trace.h, mark_jumps) on traces given SQNRs by hand: a tensor's inputs are the
// nearest traced tensors upstream, its reference level min(kCleanDb, their SQNR), and it jumps
// when its SQNR is more than jump_db below that.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "planner/builder.h"
#include "trace.h"

namespace ptq::compare {
namespace {

// An agreement whose SQNR is `db` (+inf: identical values).
metrics::Agreement with_sqnr(double db) {
  const ir::Tensor r = ir::make_tensor<float>({2}, {1.0f, -1.0f});
  const float e = std::isinf(db) ? 0.0f : static_cast<float>(std::pow(10.0, -db / 20.0));
  const ir::Tensor t = ir::make_tensor<float>({2}, {1.0f + e, -1.0f + e});
  metrics::Agreement a;
  EXPECT_TRUE(a.add(r, t).is_ok());
  return a;
}

TensorTrace traced(const std::string& name, double db) {
  TensorTrace t;
  t.pair = {name, name, false};
  t.agreement = with_sqnr(db);
  return t;
}

//   x ─► conv ─► a ─► Relu ─► r ─► Add ─► s ─► Mul(k) ─► m
//                └───────────────────┘
// a, s and m are traced; r is not (s's error is seen through it).
ir::Graph residual_graph() {
  planner::testing::Builder b;
  b.input("x", {1, 16, 4, 4});
  b.conv("conv", "x", "a", 16, 16);
  b.node("Relu", "relu", {"a"}, {"r"});
  b.node("Add", "add", {"r", "a"}, {"s"});
  b.weight("k", {1});
  b.node("Mul", "mul", {"s", "k"}, {"m"});
  b.output("m");
  return b.model.graph;
}

TEST(MarkJumps, ATensorFarBelowItsInputsJumpsAndItsReadersInheritTheError) {
  std::vector<TensorTrace> t = {traced("a", 40.0), traced("s", 15.0), traced("m", 14.0)};
  mark_jumps(residual_graph(), 10.0, t);
  EXPECT_TRUE(t[0].inputs.empty());
  EXPECT_DOUBLE_EQ(t[0].reference_db, kCleanDb);
  EXPECT_FALSE(t[0].jump);                                // at the clean level
  EXPECT_EQ(t[1].inputs, std::vector<std::string>{"a"});  // through r and directly, once
  EXPECT_NEAR(t[1].reference_db, 40.0, 1e-3);
  EXPECT_NEAR(t[1].drop_db(), 25.0, 1e-3);
  EXPECT_TRUE(t[1].jump);
  EXPECT_EQ(t[2].inputs, std::vector<std::string>{"s"});
  EXPECT_FALSE(t[2].jump);  // 1 dB below s
  EXPECT_EQ(t[1].node, "add");
  EXPECT_EQ(t[1].op_type, "Add");
}

TEST(MarkJumps, TheFirstErrorIsMeasuredFromTheCleanLevelAndExactInputsCarryNone) {
  std::vector<TensorTrace> t = {traced("a", 25.0), traced("s", 24.0), traced("m", 20.0)};
  mark_jumps(residual_graph(), 10.0, t);
  EXPECT_TRUE(t[0].jump);  // 15 dB below the clean level
  EXPECT_FALSE(t[1].jump);
  std::vector<TensorTrace> exact = {traced("a", std::numeric_limits<double>::infinity()),
                                    traced("s", 31.0), traced("m", 30.0)};
  mark_jumps(residual_graph(), 10.0, exact);
  EXPECT_DOUBLE_EQ(exact[1].reference_db, kCleanDb);
  EXPECT_FALSE(exact[1].jump);  // 9 dB below the clean level, not below +inf
  mark_jumps(residual_graph(), 5.0, exact);
  EXPECT_TRUE(exact[1].jump);
}

}  // namespace
}  // namespace ptq::compare
