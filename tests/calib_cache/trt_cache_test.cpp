// The TensorRT text cache: byte format, the spec's test vectors, versions, reader rules.
#include <bit>
#include <cmath>
#include <filesystem>
#include <random>

#include <gtest/gtest.h>

#include "ptq/calib_cache.h"
#include "ptq/util/atomic_file.h"

namespace ptq::calib {
namespace {

TEST(TrtCache, SpecTestVectors) {
  EXPECT_EQ(trt_scale_hex(1.0), "3c010204");
  EXPECT_EQ(trt_scale_hex(255.0), "40008102");
  EXPECT_EQ(trt_scale_hex(0.125 * 127.0), "3e000000");  // scale 0.125
  EXPECT_EQ(static_cast<double>(*parse_trt_hex("3f9839e4")), 1.1892666816711426);
  EXPECT_NEAR(static_cast<double>(*parse_trt_hex("3f9839e4")) * 127.0, 151.0369, 1e-4);
  EXPECT_NEAR(static_cast<double>(*parse_trt_hex("3c010a14")), 0.007875938, 1e-9);
}

TEST(TrtCache, ScaleIsTheFloat32BitsOfAmaxOver127) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> u(-20.0, 20.0);
  for (int i = 0; i < 1000; ++i) {
    const double amax = std::exp(u(rng));
    const float scale = static_cast<float>(amax / 127.0);
    EXPECT_EQ(trt_scale_hex(amax), fmt::format("{:08x}", std::bit_cast<uint32_t>(scale)));
    EXPECT_EQ(*parse_trt_hex(trt_scale_hex(amax)), scale);
  }
}

TEST(TrtCache, Versions) {
  EXPECT_EQ(parse_trt_version("8.6.1")->code(), 8601);
  EXPECT_EQ(parse_trt_version("10.3.0")->code(), 100300);
  EXPECT_EQ(parse_trt_version("7.2.3")->code(), 7203);
  EXPECT_EQ(parse_trt_version("100300")->str(), "10.3.0");
  EXPECT_EQ(parse_trt_version("8601")->str(), "8.6.1");
  EXPECT_EQ(trt_version_from_code(8510).str(), "8.5.10");
  EXPECT_FALSE(parse_trt_version("8.12.0").has_value());  // not encodable before 10
  EXPECT_FALSE(parse_trt_version("8.6.1.2").has_value());
  EXPECT_FALSE(parse_trt_version("eight").has_value());
}

CalibrationTable sample_table(std::string method) {
  CalibrationTable t;
  t.method = std::move(method);
  t.tensors["input"].amax = 1.0;
  t.tensors["/layer1/conv/Conv_output_0"].amax = 255.0;
  t.tensors["odd name: a::b (c)[d]*e/f"].amax = 0.125 * 127.0;
  return t;
}

TEST(TrtCache, WritesTheExactBytes) {
  auto text = trt_cache_string(sample_table("entropy"));
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(*text,
            "TRT-8601-EntropyCalibration2\n"
            "/layer1/conv/Conv_output_0: 40008102\n"
            "input: 3c010204\n"
            "odd name: a::b (c)[d]*e/f: 3e000000\n");
  auto v10 = trt_cache_string(sample_table("minmax"), {.version = *parse_trt_version("10.3.0")});
  ASSERT_TRUE(v10.has_value());
  EXPECT_TRUE(v10->starts_with("TRT-100300-MinMaxCalibration\n"));
  // percentile / mse, which TensorRT lacks, go under EntropyCalibration2 unless named.
  auto mse = trt_cache_string(sample_table("mse"));
  ASSERT_TRUE(mse.has_value());
  EXPECT_TRUE(mse->starts_with("TRT-8601-EntropyCalibration2\n"));
  auto named = trt_cache_string(sample_table("mse"), {.algorithm = "MinMaxCalibration"});
  ASSERT_TRUE(named.has_value());
  EXPECT_TRUE(named->starts_with("TRT-8601-MinMaxCalibration\n"));
}

TEST(TrtCache, ReadsBackWhatItWrites) {
  const CalibrationTable t = sample_table("entropy");
  auto back = parse_trt_cache(*trt_cache_string(t), "x.cache");
  ASSERT_TRUE(back.has_value()) << back.status().message();
  EXPECT_EQ(back->method, "entropy");
  EXPECT_EQ(back->provenance.at("trt_version"), "8.6.1");
  EXPECT_EQ(back->provenance.at("trt_algorithm"), "EntropyCalibration2");
  ASSERT_EQ(back->tensors.size(), 3u);
  for (const auto& [name, r] : t.tensors) {
    const TensorRange& o = back->tensors.at(name);
    EXPECT_EQ(o.amax, static_cast<double>(static_cast<float>(r.amax / 127.0)) * 127.0);
    EXPECT_TRUE(std::isnan(o.min));
    EXPECT_FALSE(o.has_histogram());
  }
}

TEST(TrtCache, ReaderRules) {
  Warnings warnings;
  auto t = parse_trt_cache(
      "TRT-100300-EntropyCalibration2\r\n"
      "a:b: 3c010204\r\n"          // split at the last ": "
      "short: 0\r\n"               // 1 hex digit: scale 0
      "UPPER: 3C010204\r\n"
      "inf: 7f800000\r\n"          // no scale
      "nan: 7fc00000\r\n"
      "\r\n",
      "t.cache", &warnings);
  ASSERT_TRUE(t.has_value()) << t.status().message();
  EXPECT_EQ(t->provenance.at("trt_version"), "10.3.0");
  EXPECT_EQ(t->tensors.size(), 3u);
  EXPECT_EQ(t->tensors.at("a:b").amax, t->tensors.at("UPPER").amax);
  EXPECT_EQ(t->tensors.at("short").amax, 0.0);
  EXPECT_FALSE(t->tensors.contains("inf"));
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("t.cache:5"), std::string::npos) << warnings[0];

  auto bad =
      parse_trt_cache("TRT-8601-MinMaxCalibration\nok: 3c010204\nbroken 3c010204\n", "b.cache");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.status().message().find("b.cache:3:"), std::string::npos) << bad.status().message();
  auto long_hex = parse_trt_cache("TRT-8601-MinMaxCalibration\nx: 123456789\n", "c.cache");
  ASSERT_FALSE(long_hex.has_value());
  EXPECT_NE(long_hex.status().message().find("c.cache:2:"), std::string::npos);
  EXPECT_FALSE(parse_trt_cache("TRT-8601-MinMaxCalibration\nx: zz\n", "d").has_value());
  EXPECT_FALSE(parse_trt_cache("TRT-8601-MinMaxCalibration\n: 3c010204\n", "d").has_value());
  auto header = parse_trt_cache("TRX-8601-Entropy\n", "h.cache");
  ASSERT_FALSE(header.has_value());
  EXPECT_NE(header.status().message().find("h.cache:1:"), std::string::npos);
  EXPECT_FALSE(parse_trt_cache("TRT-abc-Entropy\n", "h").has_value());
  EXPECT_FALSE(parse_trt_cache("TRT-8601-\n", "h").has_value());
}

TEST(TrtCache, WriteIsAtomicAndDetected) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ptq_trt_" + std::to_string(std::random_device{}()) + ".cache");
  ASSERT_TRUE(
      write_cache(sample_table("minmax"), path, {.format = CacheFormat::kTensorRT}).is_ok());
  auto bytes = util::read_file(path);
  ASSERT_TRUE(bytes.has_value());
  EXPECT_EQ(detect_format(*bytes), CacheFormat::kTensorRT);
  auto back = read_cache(path);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->method, "minmax");
  // A failing write (a name TensorRT cannot read back) leaves the earlier file untouched.
  CalibrationTable bad = sample_table("minmax");
  bad.tensors["two\nlines"] = bad.tensors.begin()->second;
  EXPECT_FALSE(write_cache(bad, path, {.format = CacheFormat::kTensorRT}).is_ok());
  EXPECT_EQ(*util::read_file(path), *bytes);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace ptq::calib
