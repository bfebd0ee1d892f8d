// calibration::prepare_for_planning and quantize_model: the steps `ptq quantize` and
// ptqkit.quantize_static take around planner::quantize, on a small residual model built in code.
#include <gtest/gtest.h>

#include <algorithm>

#include "calib_test_util.h"
#include "ptq/calibration.h"
#include "ptq/planner.h"
#include "ptq/runtime.h"

namespace ptq::calibration {
namespace {

// Every activation the default plan quantizes, in [-2, 2].
calib::CalibrationTable table_for(const ir::Model& model) {
  calib::CalibrationTable t;
  t.method = "minmax";
  t.model.graph_sha256 = onnx::graph_hash(model);
  auto names = planner::quantizable_activations(model, {});
  EXPECT_TRUE(names.has_value()) << names.status().message();
  for (const std::string& n : *names) t.tensors[n] = {.amax = 2.0, .min = -2.0, .max = 2.0};
  return t;
}

int64_t count_op(const ir::Model& m, const std::string& op) {
  return std::count_if(m.graph.nodes.begin(), m.graph.nodes.end(),
                       [&](const ir::Node& n) { return n.op_type == op; });
}

Expected<planner::QuantizeResult> quantize(ir::Model& model, const calib::CalibrationTable& t) {
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend();
  return quantize_model(model, t, {}, *cpu, 1, planner::PlanOptions{});
}

TEST(QuantizeModel, QuantizesRecordsTheCacheAndChecksTheModel) {
  ir::Model model = testing::residual_model(1);
  const calib::CalibrationTable t = table_for(model);
  auto r = quantize(model, t);
  ASSERT_TRUE(r.has_value()) << r.status().message();
  EXPECT_GT(r->quantize_nodes, 0);
  EXPECT_EQ(count_op(model, "QuantizeLinear"), r->quantize_nodes);
  ASSERT_NE(model.metadata("ptqkit.cache_hash"), nullptr);
  EXPECT_EQ(*model.metadata("ptqkit.cache_hash"), onnx::sha256_hex(calib::json_cache_string(t)));
  ASSERT_NE(model.metadata("ptqkit.method"), nullptr);
  EXPECT_EQ(*model.metadata("ptqkit.method"), "minmax");
}

TEST(PrepareForPlanning, RefusesAQuantizedModelUnlessRequantizing) {
  ir::Model model = testing::residual_model(1);
  ASSERT_TRUE(quantize(model, table_for(model)).has_value());
  ModelForms forms(model);
  std::vector<std::string> notes;
  const Status refused = prepare_for_planning(model, "q.onnx", false, forms, notes);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.code(), StatusCode::kInvalidInput);
  EXPECT_EQ(refused.message().rfind("q.onnx is already quantized (", 0), 0u) << refused.message();
  EXPECT_TRUE(notes.empty());

  ASSERT_TRUE(prepare_for_planning(model, "q.onnx", true, forms, notes).is_ok());
  EXPECT_EQ(count_op(model, "QuantizeLinear"), 0);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_EQ(notes[0].rfind("--requantize: removed ", 0), 0u) << notes[0];
  EXPECT_EQ(forms.latest_hash(), onnx::graph_hash(model));
}

TEST(PrepareForPlanning, LeavesAFloatModelOfOpset13Alone) {
  ir::Model model = testing::residual_model(1);
  const std::string before = onnx::graph_hash(model);
  ModelForms forms(model);
  std::vector<std::string> notes;
  ASSERT_TRUE(prepare_for_planning(model, "m.onnx", false, forms, notes).is_ok());
  EXPECT_TRUE(notes.empty());
  EXPECT_EQ(onnx::graph_hash(model), before);
}

}  // namespace
}  // namespace ptq::calibration
