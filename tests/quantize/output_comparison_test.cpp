// metrics::OutputComparison (`ptq compare`, ptqkit.compare): outputs matched by name, else by
// position; per-output agreement and top-1 agreement summed over batches.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ptq/metrics.h"

namespace ptq::metrics {
namespace {

ir::Graph graph_with_outputs(const std::vector<std::string>& names) {
  ir::Graph g;
  for (const std::string& n : names) {
    ir::ValueInfo v;
    v.name = n;
    g.outputs.push_back(v);
  }
  return g;
}

ir::Tensor scores(const std::vector<float>& v) {
  return ir::make_tensor<float>({static_cast<int64_t>(v.size() / 2), 2}, std::span<const float>(v));
}

TEST(OutputComparison, MatchesByNameThenCountsTopOneOverBatches) {
  const ir::Graph a = graph_with_outputs({"logits", "aux"});
  const ir::Graph b = graph_with_outputs({"aux", "logits"});  // same names, other order
  auto c = OutputComparison::create(a, b, "a.onnx", "b.onnx");
  ASSERT_TRUE(c.has_value()) << c.status().message();
  const ir::Tensor ref = scores({1, 0, 0, 1});
  const ir::Tensor flip = scores({1, 0, 2, 0});  // second row's argmax differs
  ASSERT_TRUE(c->add({{"logits", ref}, {"aux", ref}}, {{"aux", ref}, {"logits", flip}}).is_ok());
  ASSERT_TRUE(c->add({{"logits", ref}, {"aux", ref}}, {{"aux", ref}, {"logits", ref}}).is_ok());
  EXPECT_EQ(c->samples(), 4);
  EXPECT_TRUE(c->classifier());
  EXPECT_EQ(c->top1_same(), 3);
  EXPECT_EQ(c->names(), (std::vector<std::string>{"logits", "aux"}));
  EXPECT_TRUE(std::isinf(c->outputs()[1].sqnr_db()));  // aux was equal in both batches
  EXPECT_FALSE(std::isinf(c->outputs()[0].sqnr_db()));
}

TEST(OutputComparison, MatchesByPositionOrRefusesOtherCounts) {
  const ir::Graph a = graph_with_outputs({"y"});
  auto by_position = OutputComparison::create(a, graph_with_outputs({"z"}), "a", "b");
  ASSERT_TRUE(by_position.has_value());
  const ir::Tensor t = scores({0, 1});
  ASSERT_TRUE(by_position->add({{"y", t}}, {{"z", t}}).is_ok());
  EXPECT_EQ(by_position->top1_same(), 1);

  auto refused = OutputComparison::create(a, graph_with_outputs({"z", "w"}), "a.onnx", "b.onnx");
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.status().message(),
            "a.onnx has 1 outputs and b.onnx has 2, not matched by name either");
  EXPECT_FALSE(OutputComparison::create(ir::Graph{}, a, "a.onnx", "b.onnx").has_value());
}

TEST(OutputComparison, AShapeMismatchNamesTheOutput) {
  const ir::Graph a = graph_with_outputs({"y"});
  auto c = OutputComparison::create(a, a, "a", "b");
  ASSERT_TRUE(c.has_value());
  const Status s = c->add({{"y", scores({0, 1})}}, {{"y", scores({0, 1, 1, 0})}});
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind("output 'y': ", 0), 0u) << s.message();
}

}  // namespace
}  // namespace ptq::metrics
