// Runs one of the tests' ONNX Runtime scripts (node with third_party/ort's onnxruntime-node):
// tests/runtime/ort_run.js, tests/common/ort_batches.js, tests/ort_crosscheck/ort_outputs.js.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace ptq::testing {

// `node <source>/tests/<script> <args...>` (each argument quoted), its output with the test's.
// Fails the test, naming the command, when it exits non-zero; returns whether it succeeded.
inline bool run_ort_script(const std::string& script, const std::vector<std::string>& args) {
  std::string cmd = fmt::format("node '{}/tests/{}'", PTQ_SOURCE_DIR, script);
  for (const std::string& a : args) cmd += fmt::format(" '{}'", a);
  cmd += " 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << "ONNX Runtime (node + third_party/ort/node_modules/onnxruntime-node) failed "
                      "or is missing (scripts/install-deps.sh installs it): "
                   << cmd;
  return rc == 0;
}

}  // namespace ptq::testing
