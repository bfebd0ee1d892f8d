// The method names the TensorRT and ONNX Runtime files are written under and read back from
// come from the calibrator registry (ptq/calibrators.inc): every registered method round-trips
// through both where the runtime has a name for it.
#include <gtest/gtest.h>

#include <string>

#include "ptq/calib_cache.h"

namespace ptq::calib {
namespace {

CalibrationTable table_of(const std::string& method) {
  CalibrationTable t;
  t.method = method;
  t.tensors["x"] = {.amax = 2.0, .min = -2.0, .max = 2.0};
  return t;
}

void check_trt(const std::string& method, const std::string& trt) {
  const Expected<std::string> text = trt_cache_string(table_of(method));
  if (trt.empty()) {  // TensorRT has no such calibrator: written under EntropyCalibration2
    ASSERT_TRUE(text.has_value()) << method << ": " << text.status().message();
    EXPECT_EQ(text->substr(0, text->find('\n')), "TRT-8601-EntropyCalibration2") << method;
    return;
  }
  ASSERT_TRUE(text.has_value()) << method << ": " << text.status().message();
  EXPECT_EQ(text->substr(0, text->find('\n')), "TRT-8601-" + trt);
  auto back = parse_trt_cache(*text, "c.cache");
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->method, method);
}

void check_ort(const std::string& method, const std::string& ort) {
  const std::string text = ort_json_string(table_of(method), OrtJsonStyle::kTensorsData);
  const std::string written = "CalibrationMethod." + (ort.empty() ? std::string("MinMax") : ort);
  EXPECT_NE(text.find("\"" + written + "\""), std::string::npos) << method << ": " << text;
  auto back = parse_ort_json(text, "calibration.json");
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->method, ort.empty() ? "minmax" : method);
}

TEST(MethodNames, EveryRegisteredMethodRoundTrips) {
  int methods = 0;
#define PTQ_CALIBRATOR(name, trt, ort, weights, summary) \
  check_trt(#name, trt);                                 \
  check_ort(#name, ort);                                 \
  ++methods;
#define PTQ_CALIBRATOR_PARAM(method, param, lowest, highest, help)
#include "ptq/calibrators.inc"
#undef PTQ_CALIBRATOR
#undef PTQ_CALIBRATOR_PARAM
  EXPECT_GE(methods, 4);
}

TEST(MethodNames, TensorRTsFirstEntropyCalibratorReadsAsEntropy) {
  auto t = parse_trt_cache("TRT-8601-EntropyCalibration\nx: 3c010204\n", "c.cache");
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(t->method, "entropy");
  auto other = parse_trt_cache("TRT-8601-LegacyCalibration\nx: 3c010204\n", "c.cache");
  ASSERT_TRUE(other.has_value()) << other.status().message();
  EXPECT_EQ(other->method, "LegacyCalibration");
}

}  // namespace
}  // namespace ptq::calib
