// ir::op_traits: the op facts the planner, the report and the sweep's cost model share, on
// nodes built in code.
#include "ptq/ir/op_traits.h"

#include <gtest/gtest.h>

#include "ptq/ir/builders.h"

using namespace ptq::ir;

namespace {

Node op(std::string type, std::vector<std::string> inputs = {"x", "w", "b"}) {
  return make_node(std::move(type), "n", std::move(inputs), {"y"});
}

Node with_int(Node n, std::string name, int64_t v) {
  n.set_attr(int_attr(std::move(name), v));
  return n;
}

Node gemm(bool trans_b) { return with_int(op("Gemm"), "transB", trans_b ? 1 : 0); }

}  // namespace

TEST(OpTraits, WeightAndBiasSlots) {
  for (const char* type : {"Conv", "ConvTranspose", "Gemm"}) {
    const WeightedOp* w = weighted_op(op(type));
    ASSERT_NE(w, nullptr) << type;
    EXPECT_EQ(w->op_type, type);
    EXPECT_EQ(w->weight_slot, 1u) << type;
    EXPECT_EQ(w->bias_slot, 2) << type;
  }
  const WeightedOp* mm = weighted_op(op("MatMul", {"a", "b"}));
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->weight_slot, 1u);
  EXPECT_EQ(mm->bias_slot, -1);  // MatMul has no bias input

  EXPECT_EQ(weighted_op(op("Conv"))->layout, WeightLayout::kConv);
  EXPECT_EQ(weighted_op(op("ConvTranspose"))->layout, WeightLayout::kConvTransposed);
  EXPECT_EQ(weighted_op(op("Gemm"))->layout, WeightLayout::kMatrix);
  EXPECT_EQ(mm->layout, WeightLayout::kMatrix);
  EXPECT_TRUE(is_convolution(op("Conv")));
  EXPECT_TRUE(is_convolution(op("ConvTranspose")));
  EXPECT_FALSE(is_convolution(op("Gemm")));
  EXPECT_FALSE(is_convolution(op("MatMul")));
}

TEST(OpTraits, OnlyDefaultDomainWeightedOpsHaveTraits) {
  EXPECT_EQ(weighted_op(op("Relu", {"x"})), nullptr);
  EXPECT_EQ(weighted_op(op("QLinearConv")), nullptr);
  Node custom = op("Conv");
  custom.domain = "com.example";
  EXPECT_FALSE(is_weighted_op(custom));
  Node onnx = op("Conv");
  onnx.domain = "ai.onnx";
  EXPECT_TRUE(is_weighted_op(onnx));
  EXPECT_EQ(weight_channel_axis(op("Relu", {"x"}), 4), -1);
  EXPECT_EQ(input_channels(op("Relu", {"x"}), {8, 8, 3, 3}), -1);
  EXPECT_FALSE(multiply_adds_per_output(op("Relu", {"x"}), nullptr, nullptr));
}

TEST(OpTraits, ChannelAxisPerWeightedOp) {
  EXPECT_EQ(weight_channel_axis(op("Conv"), 4), 0);
  EXPECT_EQ(weight_channel_axis(op("Conv"), 3), 0);
  EXPECT_EQ(weight_channel_axis(op("ConvTranspose"), 4), 1);
  EXPECT_EQ(weight_channel_axis(gemm(true), 2), 0);   // B [N, K]: channels are rows
  EXPECT_EQ(weight_channel_axis(gemm(false), 2), 1);  // B [K, N]: channels are columns
  EXPECT_EQ(weight_channel_axis(op("Gemm"), 2), 1);   // transB defaults to 0
  EXPECT_EQ(weight_channel_axis(op("MatMul", {"a", "b"}), 2), 1);
  EXPECT_EQ(weight_channel_axis(op("MatMul", {"a", "b"}), 3), 2);   // the last axis
  EXPECT_EQ(weight_channel_axis(op("MatMul", {"a", "b"}), 1), -1);  // a vector: per-tensor
}

TEST(OpTraits, InputAndOutputChannels) {
  // Conv weight [M, C / group, kh, kw].
  EXPECT_EQ(input_channels(op("Conv"), {32, 16, 3, 3}), 16);
  EXPECT_EQ(output_channels(op("Conv"), {32, 16, 3, 3}), 32);
  const Node grouped = with_int(op("Conv"), "group", 4);
  EXPECT_EQ(input_channels(grouped, {32, 4, 3, 3}), 16);
  EXPECT_EQ(output_channels(grouped, {32, 4, 3, 3}), 32);
  const Node depthwise = with_int(op("Conv"), "group", 24);
  EXPECT_EQ(input_channels(depthwise, {24, 1, 3, 3}), 24);
  EXPECT_EQ(input_channels(op("Conv"), {32, 16, 3}), 16);  // 1-D
  EXPECT_EQ(input_channels(op("Conv"), {32, 16}), -1);     // too small a rank

  // ConvTranspose weight [C, M / group, kh, kw].
  EXPECT_EQ(input_channels(op("ConvTranspose"), {32, 8, 2, 2}), 32);
  EXPECT_EQ(output_channels(op("ConvTranspose"), {32, 8, 2, 2}), 8);
  const Node grouped_t = with_int(op("ConvTranspose"), "group", 2);
  EXPECT_EQ(input_channels(grouped_t, {32, 4, 2, 2}), 32);
  EXPECT_EQ(output_channels(grouped_t, {32, 4, 2, 2}), 8);

  // Gemm: K inputs, N outputs, whichever way B is stored.
  EXPECT_EQ(input_channels(gemm(true), {10, 64}), 64);
  EXPECT_EQ(output_channels(gemm(true), {10, 64}), 10);
  EXPECT_EQ(input_channels(gemm(false), {64, 10}), 64);
  EXPECT_EQ(output_channels(gemm(false), {64, 10}), 10);

  // MatMul B [..., K, N].
  EXPECT_EQ(input_channels(op("MatMul", {"a", "b"}), {64, 10}), 64);
  EXPECT_EQ(output_channels(op("MatMul", {"a", "b"}), {4, 64, 10}), 10);
  EXPECT_EQ(input_channels(op("MatMul", {"a", "b"}), {64}), -1);
}

TEST(OpTraits, MultiplyAddsOfConvolutions) {
  // x [1, 16, 8, 8] * w [32, 16, 3, 3], no padding -> [1, 32, 6, 6]: each of the 32·6·6 = 1152
  // outputs sums 16·3·3 = 144 products.
  const Shape x = {1, 16, 8, 8};
  const Shape w = {32, 16, 3, 3};
  EXPECT_EQ(multiply_adds_per_output(op("Conv"), &x, &w), 144.0);
  EXPECT_EQ(multiply_adds(op("Conv"), {1, 32, 6, 6}, &x, &w), 1152.0 * 144);

  // group 4: each output reads 16 / 4 = 4 channels, 4·3·3 = 36 products.
  const Shape wg = {32, 4, 3, 3};
  EXPECT_EQ(multiply_adds(with_int(op("Conv"), "group", 4), {1, 32, 6, 6}, &x, &wg), 1152.0 * 36);

  // ConvTranspose at stride 1 is a Conv over the input padded by k - 1: x [1, 8, 5, 5],
  // w [8, 4, 2, 2] -> [1, 4, 6, 6], 4·6·6 = 144 outputs of 8·2·2 = 32 taps; group 2 halves the
  // channels each output reads.
  const Shape xt = {1, 8, 5, 5};
  const Shape wt = {8, 4, 2, 2};
  EXPECT_EQ(multiply_adds(op("ConvTranspose"), {1, 4, 6, 6}, &xt, &wt), 144.0 * 32);
  const Shape wt2 = {8, 2, 2, 2};
  EXPECT_EQ(multiply_adds(with_int(op("ConvTranspose"), "group", 2), {1, 4, 6, 6}, &xt, &wt2),
            144.0 * 16);

  EXPECT_FALSE(multiply_adds_per_output(op("Conv"), &x, nullptr));  // weight shape unknown
}

TEST(OpTraits, MultiplyAddsOfMatrixProducts) {
  // [4, 64] x [64, 10]: 4·10 = 40 outputs of K = 64 products, B stored either way.
  const Shape a = {4, 64};
  const Shape bt = {10, 64};
  const Shape b = {64, 10};
  EXPECT_EQ(multiply_adds(gemm(true), {4, 10}, &a, &bt), 40.0 * 64);
  EXPECT_EQ(multiply_adds(gemm(false), {4, 10}, &a, &b), 40.0 * 64);
  // Batched: [2, 3, 5, 64] x [64, 10] -> [2, 3, 5, 10], 300 outputs.
  const Shape batched = {2, 3, 5, 64};
  EXPECT_EQ(multiply_adds(op("MatMul", {"a", "b"}), {2, 3, 5, 10}, &batched, &b), 300.0 * 64);
  // Without B's shape (or with a vector B), K is A's last dim.
  const Shape a32 = {8, 32};
  const Shape vec = {32};
  EXPECT_EQ(multiply_adds_per_output(op("MatMul", {"a", "b"}), &a32, nullptr), 32.0);
  EXPECT_EQ(multiply_adds_per_output(op("MatMul", {"a", "b"}), &a32, &vec), 32.0);
  EXPECT_FALSE(multiply_adds_per_output(op("MatMul", {"a", "b"}), nullptr, nullptr));
}

TEST(OpTraits, DataMovementClasses) {
  EXPECT_EQ(data_movement(op("Reshape", {"x", "s"})), DataMovement::kView);
  EXPECT_EQ(data_movement(op("Identity", {"x"})), DataMovement::kView);
  EXPECT_EQ(data_movement(op("Transpose", {"x"})), DataMovement::kReorder);
  EXPECT_EQ(data_movement(op("Gather", {"x", "i"})), DataMovement::kSelect);
  EXPECT_EQ(data_movement(op("Split", {"x"})), DataMovement::kSplit);
  EXPECT_EQ(data_movement(op("Tile", {"x", "r"})), DataMovement::kRepeat);
  EXPECT_EQ(data_movement(op("Concat", {"a", "b"})), DataMovement::kJoin);
  EXPECT_EQ(data_movement(op("MaxPool", {"x"})), DataMovement::kWindowMax);
  EXPECT_EQ(data_movement(op("Relu", {"x"})), DataMovement::kNone);
  EXPECT_EQ(data_movement(op("AveragePool", {"x"})), DataMovement::kNone);

  // Resize repeats elements only in nearest mode (the default); linear makes new values.
  Node resize = op("Resize", {"x", "", "scales"});
  EXPECT_EQ(data_movement(resize), DataMovement::kRepeat);
  resize.set_attr(string_attr("mode", "linear"));
  EXPECT_EQ(data_movement(resize), DataMovement::kNone);

  Node custom = op("Reshape", {"x", "s"});
  custom.domain = "com.example";
  EXPECT_FALSE(is_data_movement(custom));
}

TEST(OpTraits, ConcatAndMaxPoolShareScalesButAreNotWalkedThrough) {
  for (const char* type : {"Reshape", "Transpose", "Slice", "Split", "Expand"}) {
    EXPECT_TRUE(is_data_movement(op(type, {"x"}))) << type;
    EXPECT_TRUE(moves_one_input(op(type, {"x"}))) << type;
  }
  for (const char* type : {"Concat", "MaxPool"}) {
    EXPECT_TRUE(is_data_movement(op(type, {"x"}))) << type;
    EXPECT_FALSE(moves_one_input(op(type, {"x"}))) << type;
  }
  EXPECT_FALSE(moves_one_input(op("Relu", {"x"})));
}

TEST(OpTraits, DataInputs) {
  EXPECT_EQ(data_inputs(op("Concat", {"a", "", "c"})), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(data_inputs(op("Reshape", {"x", "shape"})), (std::vector<size_t>{0}));
  EXPECT_EQ(data_inputs(op("Gather", {"x", "indices"})), (std::vector<size_t>{0}));
}

TEST(OpTraits, PoolsAndFusableActivations) {
  for (const char* type : {"MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool"}) {
    EXPECT_TRUE(is_pool(op(type, {"x"}))) << type;
  }
  EXPECT_FALSE(is_pool(op("LpPool", {"x"})));
  EXPECT_TRUE(is_fusable_activation(op("Relu", {"x"})));
  EXPECT_TRUE(is_fusable_activation(op("Clip", {"x"})));
  EXPECT_FALSE(is_fusable_activation(op("Softmax", {"x"})));
}

TEST(OpTraits, RecurrentOpsStayFloat) {
  for (const char* type : {"LSTM", "GRU", "RNN"}) {
    ASSERT_TRUE(float_reason(op(type, {"x", "w", "r"})).has_value()) << type;
    EXPECT_NE(float_reason(op(type, {"x", "w", "r"}))->find("recurrent"), std::string::npos);
    EXPECT_FALSE(is_weighted_op(op(type, {"x", "w", "r"}))) << type;
  }
  EXPECT_FALSE(float_reason(op("MatMul", {"x", "w"})).has_value());
  Node custom = op("LSTM", {"x", "w", "r"});
  custom.domain = "com.example";
  EXPECT_FALSE(float_reason(custom).has_value());
}

TEST(OpTraits, DetectionAndSamplingOpsStayFloat) {
  const std::pair<const char*, const char*> ops[] = {
      {"GridSample", "TensorRT"}, {"NonMaxSuppression", "IoU"}, {"RoiAlign", "roi"}};
  for (const auto& [type, why] : ops) {
    const auto reason = float_reason(op(type, {"x", "g"}));
    ASSERT_TRUE(reason.has_value()) << type;
    EXPECT_NE(reason->find(why), std::string::npos) << *reason;
  }
  EXPECT_FALSE(float_reason(op("Resize", {"x"})).has_value());
  // ReverseSequence only reorders its data input (TensorRT runs it in INT8 too).
  EXPECT_EQ(data_movement(op("ReverseSequence", {"x", "lens"})), DataMovement::kReorder);
  EXPECT_EQ(data_inputs(op("ReverseSequence", {"x", "lens"})), std::vector<size_t>{0});
  for (const char* type : {"MaxUnpool", "Unique"}) {
    EXPECT_FALSE(float_reason(op(type, {"x"})).has_value()) << type;  // no rule: float
    EXPECT_FALSE(is_data_movement(op(type, {"x"}))) << type;
  }
  Node custom = op("RoiAlign", {"x", "r", "i"});
  custom.domain = "com.microsoft";
  EXPECT_FALSE(float_reason(custom).has_value());
}

TEST(OpTraits, ControlFlow) {
  for (const char* type : {"If", "Loop", "Scan"}) {
    EXPECT_TRUE(is_control_flow(op(type, {"x"}))) << type;
  }
  EXPECT_FALSE(is_control_flow(op("Relu", {"x"})));
  // Any node holding a parsed subgraph counts, whatever its op (a custom domain's loop).
  Node custom = op("MyLoop", {"x"});
  custom.domain = "com.example";
  EXPECT_FALSE(is_control_flow(custom));
  custom.attributes.push_back(graph_attr("body", Graph{}));
  EXPECT_TRUE(is_control_flow(custom));
}
