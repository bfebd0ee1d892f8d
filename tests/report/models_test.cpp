// The report module on the real test models (PTQ_TEST_DATA/models): the planner's own output
// is lint-clean, the precision summary agrees with what the planner says it quantized, and the
// Q/DQ scales come back as the planner's calibration ranges.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>
#include <set>

#include "model_util.h"
#include "ptq/lint.h"
#include "ptq/planner.h"
#include "ptq/report.h"

namespace ptq::report {
namespace {

using testing::load_test_model;
using testing::made_up_table;

class RealModels : public ::testing::TestWithParam<std::string> {};

TEST_P(RealModels, PlannerOutputIsLintClean) {
  ir::Model model = load_test_model(GetParam());
  const planner::PlanOptions options;
  auto result = planner::quantize(model, made_up_table(model, options), options);
  ASSERT_TRUE(result.has_value()) << result.status().message();
  ASSERT_GT(result->quantize_nodes, 0);
  const std::vector<Finding> findings = lint(model);
  EXPECT_TRUE(findings.empty()) << findings_text(findings);
}

TEST_P(RealModels, PerTensorWeightsAreLintCleanToo) {
  ir::Model model = load_test_model(GetParam());
  planner::PlanOptions options;
  options.per_tensor_weights = true;
  auto result = planner::quantize(model, made_up_table(model, options), options);
  ASSERT_TRUE(result.has_value()) << result.status().message();
  EXPECT_TRUE(lint(model).empty()) << findings_text(lint(model));
}

// The planner records which nodes read Q/DQ of their own unit; the summary reads precision off
// the rewritten graph alone. For weighted ops the two must agree exactly.
TEST_P(RealModels, PrecisionAgreesWithThePlanner) {
  ir::Model model = load_test_model(GetParam());
  const planner::PlanOptions options;
  auto result = planner::quantize(model, made_up_table(model, options), options);
  ASSERT_TRUE(result.has_value()) << result.status().message();
  const std::set<std::string> quantized(result->quantized_nodes.begin(),
                                        result->quantized_nodes.end());
  const PrecisionSummary s = summarize_precision(model);
  int64_t weighted = 0;
  for (const LayerInfo& l : s.layers) {
    if (l.op_type != "Conv" && l.op_type != "Gemm" && l.op_type != "MatMul") continue;
    ++weighted;
    const Precision expected = quantized.count(l.name) ? Precision::kInt8 : Precision::kFloat;
    EXPECT_EQ(l.precision, expected) << l.name << " reads " << l.inputs;
  }
  EXPECT_EQ(weighted, s.weighted_ops);
  EXPECT_GT(s.weighted_int8, 0);
  EXPECT_EQ(s.quantize_nodes, result->quantize_nodes);
  EXPECT_EQ(s.dequantize_nodes, result->dequantize_nodes);
  // Every byte of every initializer and Constant node lands in exactly one row.
  int64_t bytes = 0;
  for (const OpTypeRow& r : s.by_op_type) bytes += r.total_bytes();
  int64_t constant_bytes = 0;
  for (const ir::Initializer& i : model.graph.initializers()) {
    constant_bytes += static_cast<int64_t>(i.tensor.nbytes());
  }
  for (const ir::Node& n : model.graph.nodes) {
    const ir::Attribute* value = n.op_type == "Constant" ? n.attr("value") : nullptr;
    if (value) constant_bytes += static_cast<int64_t>(value->t.nbytes());
  }
  EXPECT_EQ(bytes, constant_bytes);
  EXPECT_EQ(s.total_param_bytes, constant_bytes);
}

// plan() names each activation's scale group and its range; qdq_to_table() reads the scales
// back from the written Q nodes: amax = scale * 127 = the group's amax (float32 rounding).
TEST_P(RealModels, QdqToTableRecoversThePlannedRanges) {
  ir::Model model = load_test_model(GetParam());
  const planner::PlanOptions options;
  auto plan = planner::plan(model, made_up_table(model, options), options);
  ASSERT_TRUE(plan.has_value()) << plan.status().message();
  ASSERT_TRUE(planner::apply(model, *plan).has_value());
  std::vector<std::string> warnings;
  auto table = qdq_to_table(model, &warnings);
  ASSERT_TRUE(table.has_value()) << table.status().message();
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(table->method, "qdq");
  size_t quantized_activations = 0;
  for (const planner::TensorPlan& t : plan->tensors) {
    if (t.role != planner::Role::kActivation) continue;
    ++quantized_activations;
    const calib::TensorRange* r = table->find(t.name);
    ASSERT_NE(r, nullptr) << t.name;
    const planner::ScaleGroup* g = plan->group_of(t.name);
    ASSERT_NE(g, nullptr) << t.name;
    EXPECT_NEAR(r->amax, g->range.amax, 1e-6 * g->range.amax) << t.name;
  }
  EXPECT_EQ(table->tensors.size(), quantized_activations);
}

// Lint checks TensorRT's rules: the ONNX Runtime form (uint8 activations, int32 bias through a
// DQ) breaks two of them, on every quantized conv.
TEST(RealModelsOrt, OrtTargetBreaksTensorRtRules) {
  ir::Model model = load_test_model("resnet18");
  planner::PlanOptions options;
  options.target = planner::Target::kOrt;
  options.activation_type = planner::ActivationType::kUInt8;
  auto result = planner::quantize(model, made_up_table(model, options), options);
  ASSERT_TRUE(result.has_value()) << result.status().message();
  const std::vector<Finding> findings = lint(model);
  std::set<std::string> rules;
  int64_t bias = 0;
  for (const Finding& f : findings) {
    rules.insert(f.rule);
    bias += f.rule == "bias-qdq" ? 1 : 0;
  }
  EXPECT_TRUE(rules.count("zero-point")) << findings_text(findings);
  EXPECT_TRUE(rules.count("bias-qdq")) << findings_text(findings);
  const PrecisionSummary s = summarize_precision(model);
  EXPECT_EQ(bias, s.weighted_int8);  // every INT8 conv/gemm has an int32 bias
}

INSTANTIATE_TEST_SUITE_P(Models, RealModels,
                         ::testing::Values("resnet18", "mobilenet_v2", "transformer"));

}  // namespace
}  // namespace ptq::report
