// compare::match_tensors on graphs built in code and quantized by the planner: which value of
// the Q/DQ model stands for each float tensor, in graph order.
#include <gtest/gtest.h>

#include "planner/builder.h"
#include "ptq/compare.h"
#include "ptq/planner.h"

namespace ptq::compare {
namespace {

using planner::testing::Builder;

//   x ─► conv1 ─► c1 ─► Relu ─► r1 ─► conv2 ─► y
// Quantized for TensorRT: x and r1 get Q/DQ (the convs' activation inputs); c1 and y are
// computed from dequantized values under their own names.
Builder conv_chain() {
  Builder b;
  b.input("x", {1, 16, 6, 6});
  b.conv("conv1", "x", "c1", 16, 16);
  b.node("Relu", "relu", {"c1"}, {"r1"});
  b.conv("conv2", "r1", "y", 16, 16);
  b.output("y");
  return b;
}

TEST(MatchTensors, DequantizedValuesStandForTheTensorsTheirQuantizeLinearReads) {
  Builder b = conv_chain();
  ir::Model q = b.model;
  Expected<planner::QuantizeResult> r = planner::quantize(q, b.table(), {});
  ASSERT_TRUE(r.has_value()) << r.status().message();
  Expected<std::vector<TensorPair>> pairs = match_tensors(b.model.graph, q.graph);
  ASSERT_TRUE(pairs.has_value()) << pairs.status().message();
  ASSERT_EQ(pairs->size(), 4u);
  EXPECT_EQ((*pairs)[0].reference, "x");
  EXPECT_EQ((*pairs)[0].test, "x_DequantizeLinear_Output");
  EXPECT_TRUE((*pairs)[0].dequantized);
  EXPECT_EQ((*pairs)[1].reference, "c1");
  EXPECT_EQ((*pairs)[1].test, "c1");
  EXPECT_FALSE((*pairs)[1].dequantized);
  EXPECT_EQ((*pairs)[2].reference, "r1");
  EXPECT_EQ((*pairs)[2].test, "r1_DequantizeLinear_Output");
  EXPECT_EQ((*pairs)[3].reference, "y");
}

TEST(MatchTensors, ValuesOfConstantsAndUnquantizedInputsAreLeftOut) {
  //   k1, k2 (initializers) ─► Mul ─► k ─┐
  //   x ──────────────────────────────► Add ─► y
  Builder b;
  b.input("x", {4});
  b.weight("k1", {4});
  b.weight("k2", {4});
  b.node("Mul", "mul", {"k1", "k2"}, {"k"});
  b.node("Add", "add", {"x", "k"}, {"y"});
  b.output("y");
  Expected<std::vector<TensorPair>> pairs = match_tensors(b.model.graph, b.model.graph);
  ASSERT_TRUE(pairs.has_value()) << pairs.status().message();
  ASSERT_EQ(pairs->size(), 1u);
  EXPECT_EQ((*pairs)[0].reference, "y");
}

TEST(MatchTensors, ModelsSharingNoTensorAreAnError) {
  Builder a = conv_chain();
  Builder b;
  b.input("x", {1, 16, 6, 6});
  b.node("Relu", "relu", {"x"}, {"other"});
  b.output("other");
  Expected<std::vector<TensorPair>> pairs = match_tensors(a.model.graph, b.model.graph);
  ASSERT_FALSE(pairs.has_value());
  EXPECT_EQ(pairs.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(pairs.status().message().find("no tensor of the same name"), std::string::npos);
}

TEST(CheckSameInputs, RankOrFixedDimsThatDifferNameBothModels) {
  Builder a = conv_chain();
  Builder b;
  b.input("x", {1, 4, 6, 6});
  b.node("Relu", "relu", {"x"}, {"y"});
  b.output("y");
  const Status s = check_same_inputs(a.model, "a.onnx", b.model, "b.onnx");
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("input 'x' of a.onnx is [1, 16, 6, 6] but 'x' of b.onnx is "
                             "[1, 4, 6, 6]"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(check_same_inputs(a.model, "a.onnx", a.model, "a.onnx").is_ok());
}

}  // namespace
}  // namespace ptq::compare
