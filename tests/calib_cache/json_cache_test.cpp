// The ptqkit JSON cache: exact round trip, deterministic bytes, errors with file and line.
#include <cmath>
#include <limits>
#include <random>

#include <gtest/gtest.h>

#include "ptq/calib_cache.h"

namespace ptq::calib {
namespace {

CalibrationTable random_table(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-30.0, 30.0);
  CalibrationTable t;
  t.method = "percentile";
  t.method_params = {{"percentile", 99.99}};
  t.model.graph_sha256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
  t.model.opset = 17;
  t.model.inputs = {{"input", {8, 3, 224, 224}}, {"mask", {8, -1}}};
  t.run = {.samples = 512, .batch = 8, .backend = "cpu", .ptqkit_version = "0.1.0",
           .date = "2024-05-01T12:00:00Z", .ignore_nonfinite = true};
  t.provenance["data"] = "calib/*.npy";
  for (int i = 0; i < 5; ++i) {
    TensorRange r;
    r.min = -std::exp(u(rng));
    r.max = std::exp(u(rng));
    r.amax = r.abs_max() * 0.75;
    r.count = static_cast<int64_t>(rng() >> 20);
    r.nonfinite = i;
    r.hist_max = r.abs_max();
    r.histogram.assign(2048, 0);
    for (int k = 0; k < 100; ++k) r.histogram[rng() % 2048] = rng() >> (k % 60);
    r.histogram[2047] = std::numeric_limits<uint64_t>::max();  // uint64 exact
    t.tensors[fmt::format("t{}/with \"quotes\" and ünïcode", i)] = r;
  }
  TensorRange unknown;  // read from a TensorRT cache: no min/max, no histogram
  unknown.amax = 3.5;
  unknown.min = unknown.max = std::numeric_limits<double>::quiet_NaN();
  t.tensors["z_unknown"] = unknown;
  return t;
}

void expect_equal(const CalibrationTable& a, const CalibrationTable& b) {
  EXPECT_EQ(a.method, b.method);
  EXPECT_EQ(a.method_params, b.method_params);
  EXPECT_EQ(a.model.graph_sha256, b.model.graph_sha256);
  EXPECT_EQ(a.model.opset, b.model.opset);
  EXPECT_EQ(a.model.inputs, b.model.inputs);
  EXPECT_EQ(a.run.samples, b.run.samples);
  EXPECT_EQ(a.run.batch, b.run.batch);
  EXPECT_EQ(a.run.backend, b.run.backend);
  EXPECT_EQ(a.run.ptqkit_version, b.run.ptqkit_version);
  EXPECT_EQ(a.run.date, b.run.date);
  EXPECT_EQ(a.run.ignore_nonfinite, b.run.ignore_nonfinite);
  EXPECT_EQ(a.provenance, b.provenance);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, r] : a.tensors) {
    SCOPED_TRACE(name);
    const TensorRange& o = b.tensors.at(name);
    EXPECT_EQ(std::bit_cast<uint64_t>(r.amax), std::bit_cast<uint64_t>(o.amax));
    EXPECT_EQ(std::isnan(r.min), std::isnan(o.min));
    if (!std::isnan(r.min)) {
      EXPECT_EQ(std::bit_cast<uint64_t>(r.min), std::bit_cast<uint64_t>(o.min));
      EXPECT_EQ(std::bit_cast<uint64_t>(r.max), std::bit_cast<uint64_t>(o.max));
    }
    EXPECT_EQ(r.count, o.count);
    EXPECT_EQ(r.nonfinite, o.nonfinite);
    EXPECT_EQ(std::bit_cast<uint64_t>(r.hist_max), std::bit_cast<uint64_t>(o.hist_max));
    EXPECT_EQ(r.histogram, o.histogram);
  }
}

TEST(JsonCache, RoundTripIsExact) {
  for (uint64_t seed : {1, 2, 3}) {
    const CalibrationTable t = random_table(seed);
    const std::string text = json_cache_string(t);
    auto back = parse_json_cache(text, "c.json");
    ASSERT_TRUE(back.has_value()) << back.status().message();
    expect_equal(t, *back);
    EXPECT_EQ(json_cache_string(*back), text);  // and the bytes are stable
  }
}

TEST(JsonCache, LayoutIsSortedOneTensorPerLine) {
  const std::string text = json_cache_string(random_table(4));
  EXPECT_TRUE(text.starts_with("{\n  \"calibration\": {"));
  const size_t format = text.find("\n  \"format\": \"ptqkit-calibration\"");
  const size_t model = text.find("\n  \"model\": ");
  const size_t tensors = text.find("\n  \"tensors\": {\n");
  const size_t version = text.find("\n  \"version\": 1\n}\n");
  ASSERT_NE(format, std::string::npos);
  EXPECT_LT(format, model);
  EXPECT_LT(model, tensors);
  EXPECT_LT(tensors, version);
  // Header lines (6 keys) + one line per tensor (6) + the closing lines.
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1 + 6 + 6 + 1 + 1);
  EXPECT_NE(text.find("\"min\":null"), std::string::npos);
  EXPECT_NE(text.find("\"counts\":[["), std::string::npos);
}

TEST(JsonCache, FileRoundTripAndDetection) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("ptq_json_" + std::to_string(std::random_device{}()) + ".json");
  const CalibrationTable t = random_table(5);
  ASSERT_TRUE(write_cache(t, path).is_ok());
  auto back = read_cache(path);
  ASSERT_TRUE(back.has_value()) << back.status().message();
  expect_equal(t, *back);
  std::filesystem::remove(path);
  auto missing = read_cache(path);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.status().message().find(path.filename().string()), std::string::npos);
}

std::string error_of(std::string_view text) {
  auto t = parse_json_cache(text, "bad.json");
  EXPECT_FALSE(t.has_value());
  return t.has_value() ? "" : t.status().message();
}

TEST(JsonCache, ErrorsNameFileAndLine) {
  CalibrationTable t = random_table(6);
  std::string good = json_cache_string(t);
  EXPECT_NE(error_of("{\n  \"format\": \"ptqkit-calibration\",\n  oops\n}").find("bad.json:3:"),
            std::string::npos);
  EXPECT_NE(error_of("{\"format\": \"other\"}").find("not a ptqkit"), std::string::npos);
  std::string v2 = good;
  v2.replace(v2.find("\"version\": 1"), 12, "\"version\": 2");
  EXPECT_NE(error_of(v2).find("unsupported cache version 2"), std::string::npos);

  // A broken histogram pair is reported on its tensor's line.
  std::string broken = good;
  const size_t t2 = broken.find("\"t2/");
  const size_t counts = broken.find("\"counts\":[[", t2);
  broken.replace(counts, 11, "\"counts\":[[4096,1],[");
  const std::string message = error_of(broken);
  const int line =
      1 + static_cast<int>(std::count(good.begin(), good.begin() + static_cast<int64_t>(t2), '\n'));
  EXPECT_NE(message.find(fmt::format("bad.json:{}:", line)), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);

  std::string negative = good;
  negative.replace(negative.find("\"amax\":", t2), 7, "\"amax\":-");
  EXPECT_NE(error_of(negative).find("amax"), std::string::npos);
  std::string no_method = good;
  no_method.replace(no_method.find("\"method\":\"percentile\""), 21, "\"method\":\"\"");
  EXPECT_NE(error_of(no_method).find("method"), std::string::npos);
}

// SmoothQuant's factors come back bit for bit (a --cache run smooths with them again); a cache
// without them writes no "smoothquant" key, so older caches keep their bytes.
TEST(JsonCache, SmoothQuantRecordRoundTrips) {
  CalibrationTable t = random_table(7);
  EXPECT_EQ(json_cache_string(t).find("smoothquant"), std::string::npos);
  t.smoothquant = SmoothQuantRecord{.alpha = 0.65, .factors = {{"ln_out", {0.1, 1.0 / 3.0, 7.25}},
                                                               {"x", {1e-5, 2.0}}}};
  const std::string text = json_cache_string(t);
  auto back = parse_json_cache(text, "c.json");
  ASSERT_TRUE(back.has_value()) << back.status().message();
  ASSERT_TRUE(back->smoothquant.has_value());
  EXPECT_EQ(*back->smoothquant, *t.smoothquant);
  EXPECT_EQ(json_cache_string(*back), text);

  std::string bad_alpha = text;
  bad_alpha.replace(bad_alpha.find("\"alpha\":0.65"), 12, "\"alpha\":1.50");
  EXPECT_NE(error_of(bad_alpha).find("alpha 1.5 is not in [0, 1]"), std::string::npos);
  std::string bad_factor = text;
  bad_factor.replace(bad_factor.find("2.0]"), 3, "0.0");
  EXPECT_NE(error_of(bad_factor).find("factor 0.0 of 'x'"), std::string::npos);
}

TEST(JsonCache, NumberBeyondDoubleIsAnErrorNotAThrow) {
  // nlohmann throws out_of_range (not parse_error) for "1e999": found by fuzz_cache_reader
  // (tests/fuzz/regressions/json_number_overflow.json).
  std::string huge = json_cache_string(random_table(7));
  const size_t amax = huge.find("\"amax\":");
  huge.replace(amax, 7, "\"amax\":1e999,\"was\":");
  const auto before = std::string_view(huge).substr(0, amax);
  const int line = 1 + static_cast<int>(std::count(before.begin(), before.end(), '\n'));
  const std::string message = error_of(huge);
  EXPECT_NE(message.find(fmt::format("bad.json:{}: invalid JSON: number overflow parsing '1e999'",
                                     line)),
            std::string::npos)
      << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace ptq::calib
