// `ptq quantize --cache` reproduces the model of the run that wrote the cache: the options that
// run was given are recorded in the cache (with its bias corrections) and taken again where not
// given; a given option wins, except one changing the weights the corrections were measured for
// (refused unless --force). Through the built binary, on the example.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "calib_test_util.h"
#include "cli/run_ptq.h"
#include "common/files.h"

namespace ptq::calibration {
namespace {

using ptq::testing::PtqResult;
using ptq::testing::run_ptq;
using testing::example_data;
using testing::example_model;
using ptq::testing::read_file;
using testing::TempDir;

TEST(QuantizeSettingsCli, CacheReproducesTheModelByteForByte) {
  ::setenv("SOURCE_DATE_EPOCH", "1714564800", 1);
  TempDir dir;
  const std::string cache = dir / "c.json", first = dir / "a.onnx", again = dir / "b.onnx";
  PtqResult r = run_ptq({"quantize", example_model(), "--data", example_data(), "--samples", "32",
                         "--method", "minmax", "--bias-correction",
                         "--threads", "1", "-o", first, "--cache-out", cache});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("corrected biases:"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read_file(cache));
  EXPECT_EQ(j["options"]["per_tensor_weights"], "false");
  EXPECT_EQ(j["options"]["bias_correction"], "true");
  EXPECT_EQ(j["options"]["target"], "tensorrt");
  EXPECT_FALSE(j["bias_corrections"].empty());

  // Nothing but the cache: the recorded options and corrections give the same bytes.
  r = run_ptq({"quantize", example_model(), "--cache", cache, "-o", again, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_file(first), read_file(again));

  // A given option wins (the cache's corrections still apply: the weights are the same).
  r = run_ptq({"quantize", example_model(), "--cache", cache, "--target", "ort", "-o", again,
               "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(first), read_file(again));
  EXPECT_NE(read_file(again).find("_corrected"), std::string::npos);

  // Per-tensor weights are not those the corrections were measured for: refused, naming the
  // option; --force uses them anyway.
  r = run_ptq({"quantize", example_model(), "--cache", cache, "--per-tensor-weights", "-o", again});
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_NE(r.err.find("--per-tensor-weights"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(cache), std::string::npos) << r.err;
  r = run_ptq({"quantize", example_model(), "--cache", cache, "--per-tensor-weights", "--force",
               "-o", again});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("--force: --per-tensor-weights"), std::string::npos) << r.err;

  // --bias-correction with a cache that holds no corrections needs data.
  const std::string plain = dir / "plain.json";
  r = run_ptq({"calibrate", example_model(), "--data", example_data(), "--samples", "32",
               "--method", "minmax", "-o", plain, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_ptq({"quantize", example_model(), "--cache", plain, "--bias-correction", "-o", again});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bias correction needs data"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ptq::calibration
