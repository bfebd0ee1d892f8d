// Shared by the quantize/eval/compare CLI tests: paths of the bundled example, a scratch
// folder per test, and small readers for what the commands write.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/run_ptq.h"
#include "common/files.h"
#include "common/paths.h"
#include "ptq/data.h"
#include "ptq/onnx.h"

namespace ptq::quantize_testing {

namespace fs = std::filesystem;
using ptq::testing::calib_npy;
using ptq::testing::example_dir;
using ptq::testing::example_model;
using ptq::testing::read_file;
using ptq::testing::run_ptq;
using ptq::testing::test_labels;
using ptq::testing::test_npy;

// A fresh folder under the build tree named after the running test.
inline fs::path scratch_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return ptq::testing::scratch_dir(
      {"quantize", std::string(info->test_suite_name()) + "." + info->name()});
}

// A folder private to this test process (ctest runs every test in a process of its own, in
// parallel), removed by the fixture that made it.
inline fs::path process_dir(const std::string& name) {
  return ptq::testing::scratch_dir({"quantize", name + "-" + std::to_string(::getpid())});
}

inline int64_t count_op(const ir::Model& m, std::string_view op) {
  return std::count_if(m.graph.nodes.begin(), m.graph.nodes.end(),
                       [&](const ir::Node& n) { return n.op_type == op; });
}

// Row-wise argmax of a [N, C] float tensor (first index on ties), straight from the values.
inline std::vector<int64_t> argmax_of(const ir::Tensor& t) {
  std::vector<int64_t> out;
  const int64_t n = t.dim(0), c = t.size() / t.dim(0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t best = 0;
    for (int64_t j = 1; j < c; ++j) {
      if (t.as_double(i * c + j) > t.as_double(i * c + best)) best = j;
    }
    out.push_back(best);
  }
  return out;
}

inline nlohmann::json parse_json(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(j.is_discarded()) << "not JSON: " << text;
  return j;
}

}  // namespace ptq::quantize_testing
