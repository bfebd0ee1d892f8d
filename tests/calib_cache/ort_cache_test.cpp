// ONNX Runtime's calibration.cache and calibration.json: read what ORT writes, write on request.
#include <cmath>

#include <gtest/gtest.h>

#include "ptq/calib_cache.h"

namespace ptq::calib {
namespace {

TEST(OrtCache, TextRoundTrip) {
  CalibrationTable t;
  t.method = "entropy";
  t.tensors["input"].amax = 2.6400000000000001;
  t.tensors["name with spaces"].amax = 0.1;
  const std::string text = ort_text_string(t);
  EXPECT_EQ(text, "input 2.64\nname with spaces 0.1\n");
  EXPECT_EQ(detect_format(text), CacheFormat::kOrtText);
  auto back = parse_ort_text(text, "calibration.cache");
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->tensors.at("input").amax, 2.64);
  EXPECT_EQ(back->tensors.at("name with spaces").amax, 0.1);
  EXPECT_TRUE(std::isnan(back->tensors.at("input").min));
}

TEST(OrtCache, TextReaderRules) {
  Warnings w;
  auto t = parse_ort_text("a 1.5\r\nb -0.25\n\nc inf\n", "c.cache", &w);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->tensors.at("b").amax, 0.25);
  EXPECT_FALSE(t->tensors.contains("c"));
  EXPECT_EQ(w.size(), 2u);
  auto bad = parse_ort_text("a 1.5\nb\n", "c.cache");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("c.cache:2:"), std::string::npos);
  EXPECT_FALSE(parse_ort_text("a 1.5x\n", "c").has_value());
}

TEST(OrtCache, ReadsMinMaxJson) {
  auto t = parse_ort_json(R"({"input": [-1.5, 2.0], "relu": [0.0, 3.25]})", "calibration.json");
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(t->tensors.at("input").min, -1.5);
  EXPECT_EQ(t->tensors.at("input").max, 2.0);
  EXPECT_EQ(t->tensors.at("input").amax, 2.0);
  EXPECT_EQ(t->tensors.at("relu").amax, 3.25);
}

TEST(OrtCache, ReadsTensorsDataJson) {
  // The encoding of onnxruntime.quantization's write_calibration_table for a TensorsData.
  const char* text = R"({"CLS": "TensorsData",
    "data": {
      "x": {"lowest": {"data": -0.5, "dtype": "float32", "CLS": "numpy.array"},
            "highest": {"data": 4.0, "dtype": "float32", "CLS": "numpy.array"},
            "CLS": "TensorData"},
      "y": {"lowest": {"data": [-7.0], "dtype": "float32", "CLS": "numpy.array"},
            "highest": {"data": [1.0], "dtype": "float32", "CLS": "numpy.array"},
            "hist": {"data": [1, 2], "dtype": "int64", "CLS": "numpy.array"},
            "CLS": "TensorData"}},
    "calibration_method": {"CLS": "CalibrationMethod", "value": "CalibrationMethod.Entropy"}})";
  EXPECT_EQ(detect_format(text), CacheFormat::kOrtJson);
  auto t = parse_ort_json(text, "calibration.json");
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(t->method, "entropy");
  EXPECT_EQ(t->tensors.at("x").amax, 4.0);
  EXPECT_EQ(t->tensors.at("y").amax, 7.0);
  EXPECT_EQ(t->tensors.at("y").min, -7.0);
}

TEST(OrtCache, JsonWriteAndReadBack) {
  CalibrationTable t;
  t.method = "minmax";
  t.tensors["a"] = TensorRange{.amax = 3.0, .min = -3.0, .max = 1.0, .count = 4};
  for (OrtJsonStyle style : {OrtJsonStyle::kMinMax, OrtJsonStyle::kTensorsData}) {
    auto back = parse_ort_json(ort_json_string(t, style), "o.json");
    ASSERT_TRUE(back.has_value()) << back.status().message();
    EXPECT_EQ(back->tensors.at("a").min, -3.0);
    EXPECT_EQ(back->tensors.at("a").max, 1.0);
    EXPECT_EQ(back->tensors.at("a").amax, 3.0);
  }
  EXPECT_EQ(ort_json_string(t, OrtJsonStyle::kMinMax), "{\"a\":[-3.0,1.0]}\n");
  t.method = "entropy";  // a clipped range is written symmetric
  t.tensors["a"].amax = 2.0;
  EXPECT_EQ(ort_json_string(t, OrtJsonStyle::kMinMax), "{\"a\":[-2.0,2.0]}\n");
  EXPECT_NE(ort_json_string(t, OrtJsonStyle::kTensorsData).find("CalibrationMethod.Entropy"),
            std::string::npos);
}

TEST(OrtCache, JsonErrors) {
  auto bad = parse_ort_json("{\"a\": [1.0, 2.0],\n \"b\": \"wrong\"}", "o.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("o.json:2:"), std::string::npos) << bad.status().message();
  auto syntax = parse_ort_json("{\n\"a\": [1.0,\n", "s.json");
  ASSERT_FALSE(syntax.has_value());
  EXPECT_NE(syntax.status().message().find("s.json:"), std::string::npos);
  // A number beyond double's range: an error on its line, not an escaping exception.
  auto overflow = parse_ort_json("{\"a\": [1.0, 2.0],\n \"b\": [0, -1e400]}", "n.json");
  ASSERT_FALSE(overflow.has_value());
  EXPECT_NE(overflow.status().message().find("n.json:2: invalid JSON: number overflow"),
            std::string::npos)
      << overflow.status().message();
}

}  // namespace
}  // namespace ptq::calib
