// Every zoo model quantizes: `ptq quantize --data` (the default method, 2 calibration samples)
// writes a Q/DQ model that `ptq quantize` has run through the ONNX checker, and ONNX Runtime
// runs it on 4 held-out samples. Its outputs against the float model's (both under ORT) have an
// SQNR of at least kMinSqnrDb: a wrong scale, zero point or axis gives about 0 dB or less. The
// zoo's weights are random; CNNs with depthwise and squeeze-excite blocks lose the most
// (efficientnet_b0 7.7 dB, mobilenet_v3_large 12.6 on 2 samples), so the bound catches errors,
// and the accuracy table (make accuracy-zoo) compares the methods.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include <fmt/format.h>

#include "cli/run_ptq.h"
#include "zoo.h"

namespace ptq::zoo {
namespace {

constexpr double kMinSqnrDb = 5.0;
constexpr int kCalibSamples = 2;
constexpr int kTestSamples = 4;

class ZooQuantize : public ::testing::TestWithParam<Model> {};

TEST_P(ZooQuantize, WritesAModelOnnxRuntimeRuns) {
  const Model& m = GetParam();
  const auto dir = scratch("quantize", m.name);
  const auto int8 = dir / (m.name + ".int8.onnx");
  std::vector<std::string> args = {"quantize", onnx(m).string(), "-o", int8.string(),
                                   "--samples", std::to_string(kCalibSamples), "--batch", "2",
                                   "--threads", "1", "-q"};
  for (const std::string& a : data_args(m, "calib")) args.push_back(a);
  const auto r = ptq::testing::run_ptq(args);
  ASSERT_EQ(r.exit_code, 0) << m.name << ": " << r.err;
  ASSERT_TRUE(run_ort(onnx(m), m, "test", kTestSamples, 4, dir / "fp32"));
  ASSERT_TRUE(run_ort(int8, m, "test", kTestSamples, 4, dir / "int8"));
  for (const OutputError& e : compare(m, dir / "fp32", dir / "int8")) {
    EXPECT_TRUE(std::isfinite(e.rel_l2)) << m.name << " output " << e.output;
    EXPECT_GE(e.sqnr_db, kMinSqnrDb) << m.name << " output " << e.output;
    std::printf("%s %s: INT8 SQNR %.1f dB\n", m.name.c_str(), e.output.c_str(), e.sqnr_db);
  }
}

GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(ZooQuantize);
INSTANTIATE_TEST_SUITE_P(Zoo, ZooQuantize, ::testing::ValuesIn(models()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace ptq::zoo
