// calibration::read_cache_for: a cache is taken for the model it was calibrated for (any form
// of it, or the cache a quantized model records) and refused for another graph unless forced;
// with a plan, its tensors are checked against the activations the plan quantizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "calib_test_util.h"
#include "ptq/calibration.h"
#include "ptq/onnx.h"
#include "ptq/planner.h"

namespace ptq::calibration {
namespace {

using testing::TempDir;

// A table for `model` with one entry per activation the default plan quantizes.
calib::CalibrationTable table_for(const ir::Model& model) {
  calib::CalibrationTable t;
  t.method = "minmax";
  t.model.graph_sha256 = onnx::graph_hash(model);
  auto names = planner::quantizable_activations(model, {});
  EXPECT_TRUE(names.has_value()) << names.status().message();
  for (const std::string& n : *names) t.tensors[n] = {.amax = 2.0, .min = -2.0, .max = 2.0};
  return t;
}

std::string write_json(const TempDir& dir, const std::string& name,
                       const calib::CalibrationTable& t) {
  const std::string path = dir / name;
  EXPECT_TRUE(calib::write_json_cache(t, path).is_ok());
  return path;
}

TEST(CacheUse, TakesTheCacheOfTheModel) {
  TempDir dir;
  const ir::Model model = testing::residual_model(1);
  const std::string path = write_json(dir, "c.json", table_for(model));
  auto c = read_cache_for(model, ModelForms(model), path, {});
  ASSERT_TRUE(c.has_value()) << c.status().message();
  EXPECT_TRUE(c->warnings.empty());
  EXPECT_EQ(c->table.model.graph_sha256, onnx::graph_hash(model));
}

TEST(CacheUse, RefusesAnotherGraphUnlessForced) {
  TempDir dir;
  const ir::Model model = testing::residual_model(1);
  const ir::Model other = testing::residual_model(2);
  const std::string path = write_json(dir, "other.json", table_for(other));
  auto refused = read_cache_for(model, ModelForms(model), path, {});
  ASSERT_FALSE(refused.has_value());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidInput);
  const std::string& m = refused.status().message();
  EXPECT_NE(m.find(path), std::string::npos) << m;
  EXPECT_NE(m.find(onnx::graph_hash(other)), std::string::npos) << m;
  EXPECT_NE(m.find(onnx::graph_hash(model)), std::string::npos) << m;
  EXPECT_NE(m.find("--force"), std::string::npos) << m;

  auto forced = read_cache_for(model, ModelForms(model), path, {.force = true});
  ASSERT_TRUE(forced.has_value()) << forced.status().message();
  ASSERT_EQ(forced->warnings.size(), 1u);
  EXPECT_EQ(forced->warnings[0], "--force: using " + path + ", calibrated for another graph");
}

TEST(CacheUse, TakesACacheOfAnyFormOrTheRecordedOne) {
  TempDir dir;
  const ir::Model given = testing::residual_model(1);
  const ir::Model later = testing::residual_model(2);
  ModelForms forms(given);
  forms.add(later);
  auto c = read_cache_for(later, forms, write_json(dir, "later.json", table_for(later)), {});
  EXPECT_TRUE(c.has_value()) << c.status().message();

  // A quantized model records the hash of the cache it was quantized with.
  const calib::CalibrationTable recorded = table_for(testing::residual_model(3));
  ir::Model quantized = testing::residual_model(4);
  quantized.set_metadata("ptqkit.cache_hash", onnx::sha256_hex(calib::json_cache_string(recorded)));
  const std::string path = write_json(dir, "r.json", recorded);
  auto r = read_cache_for(quantized, ModelForms(quantized), path, {});
  EXPECT_TRUE(r.has_value()) << r.status().message();
}

TEST(CacheUse, ACacheWithoutAHashIsTakenAsItIs) {
  TempDir dir;
  const ir::Model model = testing::residual_model(1);
  calib::CalibrationTable t = table_for(testing::residual_model(2));
  const std::string path = dir / "c.cache";
  ASSERT_TRUE(calib::write_trt_cache(t, path).is_ok());
  auto c = read_cache_for(model, ModelForms(model), path, {});
  ASSERT_TRUE(c.has_value()) << c.status().message();
  EXPECT_TRUE(c->warnings.empty());
}

TEST(CacheUse, WithAPlanReportsMissingAndUnknownTensors) {
  TempDir dir;
  const ir::Model model = testing::residual_model(1);
  calib::CalibrationTable t = table_for(model);
  ASSERT_FALSE(t.tensors.empty());
  const std::string dropped = t.tensors.begin()->first;
  t.tensors.erase(dropped);
  t.tensors["no_such_tensor"] = {.amax = 1.0};
  t.tensors["W"] = {.amax = 1.0};  // a value of the model the plan does not quantize: expected
  const std::string path = write_json(dir, "c.json", t);
  const planner::PlanOptions plan;
  auto c = read_cache_for(model, ModelForms(model), path, {.plan = &plan});
  ASSERT_TRUE(c.has_value()) << c.status().message();
  ASSERT_EQ(c->warnings.size(), 2u);
  EXPECT_EQ(c->warnings[0].find(path + ": 1 tensor(s) missing"), 0u) << c->warnings[0];
  EXPECT_NE(c->warnings[0].find(dropped), std::string::npos) << c->warnings[0];
  EXPECT_EQ(c->warnings[1],
            path + ": 1 cache entr(y/ies) match no tensor and are ignored: no_such_tensor");
}

// The front ends that name a recorded setting by its cache key (the Python module's given
// options) get the flag `ptq quantize` gives it.
TEST(RecordedSettings, EachKeyNamesItsFlag) {
  EXPECT_EQ(recorded_option_flag("per_tensor_weights"), "--per-tensor-weights");
  EXPECT_EQ(recorded_option_flag("fold_batchnorm"), "--no-fold-batchnorm");
  EXPECT_EQ(recorded_option_flag("no_such_option"), "");
  calib::CalibrationTable table;
  record_settings(QuantizeSettings{}, table);
  std::vector<std::string> flags;
  for (const auto& [key, value] : table.options) flags.push_back(recorded_option_flag(key));
  std::vector<std::string> want = recorded_option_flags();
  std::sort(flags.begin(), flags.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(flags, want);
}

}  // namespace
}  // namespace ptq::calibration
