// The real test models (PTQ_TEST_DATA/models/<name>.onnx) and made-up calibration tables.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>

#include "common/paths.h"
#include "ptq/calib_cache.h"
#include "ptq/onnx.h"
#include "ptq/planner.h"

namespace ptq::report::testing {

inline std::filesystem::path test_model_path(const std::string& name) {
  return ptq::testing::test_models_dir() / (name + ".onnx");
}

// Loads a test model; a missing file fails the test loudly (run scripts/make-testdata.sh).
inline ir::Model load_test_model(const std::string& name) {
  const std::filesystem::path path = test_model_path(name);
  auto m = onnx::load_model(path);
  if (!m.has_value()) {
    ADD_FAILURE() << "cannot load " << path
                  << " (generate it with scripts/make-testdata.sh): " << m.status().message();
    return ir::Model{};
  }
  return std::move(m).value();
}

// Plausible made-up ranges for every tensor the planner may quantize: amax in [0.5, 8],
// min = -0.3 amax, max = amax (fixed seed).
inline calib::CalibrationTable made_up_table(const ir::Model& model,
                                             const planner::PlanOptions& options) {
  calib::CalibrationTable t;
  t.method = "minmax";
  auto names = planner::quantizable_activations(model, options);
  EXPECT_TRUE(names.has_value()) << names.status().message();
  if (!names.has_value()) return t;
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> dist(0.5, 8.0);
  for (const std::string& n : *names) {
    calib::TensorRange r;
    r.amax = dist(rng);
    r.min = -0.3 * r.amax;
    r.max = r.amax;
    r.count = 1000;
    t.tensors[n] = r;
  }
  return t;
}

}  // namespace ptq::report::testing
