// Count options (--threads, --parallel, --max-float-layers, ...) refuse what is out of range
// with a usage error (exit 2) that says what they expect, not CLI11's whole double range.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/run_ptq.h"

using ptq::testing::run_ptq;

namespace {

std::string example(const std::string& file) {
  return std::string(PTQ_SOURCE_DIR) + "/examples/" + file;
}

TEST(CountOptions, OutOfRangeIsAUsageErrorSayingWhatIsExpected) {
  const std::string model = example("fashion_cnn.onnx"), data = example("data/calib.npy");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"run", model, "--data", data, "--threads", "-1", "-o", "unused"},
       "ptq: error: --threads: expected a number >= 0, not '-1'"},
      {{"calibrate", model, "--data", data, "--threads", "two", "-o", "unused.json"},
       "ptq: error: --threads: expected a number >= 0, not 'two'"},
      {{"sensitivity", model, "--data", data, "--eval", data, "--parallel", "0", "-o", "u.json"},
       "ptq: error: --parallel: expected a number >= 1, not '0'"},
      {{"sensitivity", model, "--data", data, "--eval", data, "--target-drop", "0.1",
        "--max-float-layers", "-2", "-o", "u.json"},
       "ptq: error: --max-float-layers: expected a number >= 0, not '-2'"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args[0] + " " + c.message);
    const auto r = run_ptq(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, c.message + "\n");
  }
}

}  // namespace
