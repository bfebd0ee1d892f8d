// Helpers of the calibration tests: a temporary folder per test, small models built in code,
// .npy sample files with fixed seeds, and slices of the bundled example data.
#pragma once

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/files.h"
#include "common/node_builder.h"
#include "common/random.h"
#include "common/temp_dir.h"
#include "ptq/data.h"
#include "ptq/ir.h"
#include "ptq/onnx.h"

namespace ptq::calibration::testing {

namespace fs = std::filesystem;

using ptq::testing::TempDir;

// float32 draws of N(0, scale) in double from std::mt19937_64(seed).
inline ir::Tensor random_tensor(ir::Shape shape, uint64_t seed, double scale = 1.0) {
  std::mt19937_64 rng(seed);
  return ptq::testing::drawn_tensor(std::move(shape), std::normal_distribution<double>(0.0, scale),
                                    rng);
}

// A residual block with every intermediate also a graph output (so tests see its values):
//
//   x[N,16,4,4] ──► Conv(W[16,16,1,1], B[16]) ──► c ──► Relu ──► r ──► Add(r, x) ──► y
//        └──────────────────────────────────────────────────────────┘
//
// `seed` varies the weights (a second seed gives a model of another graph hash).
inline ir::Model residual_model(uint64_t seed = 1) {
  ir::Model m;
  m.ir_version = 8;
  m.producer_name = "ptq-calibration-test";
  m.set_opset("", 13);
  ir::Graph& g = m.graph;
  g.name = "residual";
  const std::vector<ir::Dim> act{ir::Dim::symbol("N"), ir::Dim::of(16), ir::Dim::of(4),
                                 ir::Dim::of(4)};
  g.inputs.push_back({"x", {ir::DType::kFloat32, act, {}}, {}});
  for (const char* out : {"c", "r", "y"})
    g.outputs.push_back({out, {ir::DType::kFloat32, act, {}}, {}});
  g.set_initializer("W", random_tensor({16, 16, 1, 1}, seed, 0.3));
  g.set_initializer("B", random_tensor({16}, seed + 100, 0.1));
  g.nodes.push_back(ptq::testing::output_node("Conv", {"x", "W", "B"}, {"c"}));
  g.nodes.push_back(ptq::testing::output_node("Relu", {"c"}, {"r"}));
  g.nodes.push_back(ptq::testing::output_node("Add", {"r", "x"}, {"y"}));
  return m;
}

// Saves `m` and loads it back (so shape inference fills the value types, as for any file).
inline ir::Model save_and_load(const ir::Model& m, const std::string& path) {
  EXPECT_TRUE(onnx::save_model(m, path).is_ok());
  auto loaded = onnx::load_model(path);
  EXPECT_TRUE(loaded.has_value()) << loaded.status().message();
  return std::move(*loaded);
}

// `n` samples [n,16,4,4] of a Gaussian with a few outliers, as a .npy file.
inline ir::Tensor residual_samples(int64_t n, uint64_t seed) {
  ir::Tensor t = random_tensor({n, 16, 4, 4}, seed);
  std::mt19937_64 rng(seed + 7);
  float* p = t.data<float>();
  for (int k = 0; k < 5; ++k) p[rng() % static_cast<uint64_t>(t.size())] *= 12.0f;
  return t;
}

// Rows [first, first + count) of a tensor (any dtype), as a new tensor.
inline ir::Tensor rows(const ir::Tensor& t, int64_t first, int64_t count) {
  ir::Shape shape = t.shape();
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(shape[0]);
  shape[0] = count;
  ir::Tensor out(t.dtype(), shape);
  std::memcpy(out.raw(), static_cast<const char*>(t.raw()) + static_cast<size_t>(first) * row_bytes,
              static_cast<size_t>(count) * row_bytes);
  return out;
}

inline std::string example_model() {
  return std::string(PTQ_SOURCE_DIR) + "/examples/fashion_cnn.onnx";
}
inline std::string example_data() {
  return std::string(PTQ_SOURCE_DIR) + "/examples/data/calib.npy";
}

// The cache text with the two fields that record the batch size zeroed: calibration.batch and
// the batch dim of model.inputs. Everything else (every tensor line) is compared as is.
inline std::string without_batch(const std::string& text) {
  std::string out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("  \"calibration\":"))
      line = std::regex_replace(line, std::regex("\"batch\":\\d+"), "\"batch\":0");
    if (line.starts_with("  \"model\":"))
      line = std::regex_replace(line, std::regex("\"shape\":\\[-?\\d+"), "\"shape\":[0");
    out += line + "\n";
  }
  return out;
}

// The "tensors" section of a ptqkit JSON cache, verbatim.
inline std::string tensors_section(const std::string& text) {
  const size_t at = text.find("\n  \"tensors\":");
  return at == std::string::npos ? "" : text.substr(at);
}

}  // namespace ptq::calibration::testing
