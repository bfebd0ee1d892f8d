// Table operations without the methods: statistics merge and model checks.
#include <cmath>

#include <gtest/gtest.h>

#include "ptq/calib_cache.h"

namespace ptq::calib {
namespace {

TensorRange range(double lo, double hi, int64_t count, double T,
                  std::vector<std::pair<int, uint64_t>> bins) {
  TensorRange r{.amax = std::max(-lo, hi), .min = lo, .max = hi, .count = count};
  if (T > 0) {
    r.hist_max = T;
    r.histogram.assign(2048, 0);
    for (auto [b, c] : bins) r.histogram[static_cast<size_t>(b)] = c;
  }
  return r;
}

CalibrationTable shard(TensorRange a, std::string hash = "h") {
  CalibrationTable t;
  t.method = "entropy";
  t.model.graph_sha256 = std::move(hash);
  t.run.samples = 10;
  t.run.batch = 5;
  t.run.backend = "cpu";
  t.tensors["a"] = std::move(a);
  return t;
}

TEST(MergeTables, StatisticsAddOverACommonRange) {
  const std::vector<CalibrationTable> shards = {
      shard(range(-1.0, 2.0, 3, 4.0, {{10, 1}, {20, 2}})),
      shard(range(-4.0, 0.5, 2, 4.0, {{10, 1}, {2047, 1}}))};
  auto m = merge_tables(shards);
  ASSERT_TRUE(m.has_value()) << m.status().message();
  const TensorRange& r = m->tensors.at("a");
  EXPECT_EQ(r.min, -4.0);
  EXPECT_EQ(r.max, 2.0);
  EXPECT_EQ(r.count, 5);
  EXPECT_EQ(r.amax, 4.0);
  EXPECT_EQ(r.histogram[10], 2u);
  EXPECT_EQ(r.histogram[20], 2u);
  EXPECT_EQ(r.histogram[2047], 1u);
  EXPECT_EQ(m->method, "minmax");
  EXPECT_EQ(m->run.samples, 20);
  EXPECT_EQ(m->run.batch, 5);
}

TEST(MergeTables, RefusesWhatCannotBeMergedExactly) {
  const CalibrationTable a = shard(range(-1.0, 2.0, 3, 2.0, {{1, 3}}));
  const CalibrationTable b = shard(range(-1.0, 3.0, 3, 3.0, {{1, 3}}));
  const std::vector<CalibrationTable> different_T = {a, b};
  auto e = merge_tables(different_T);
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("tensor 'a'"), std::string::npos);
  auto dropped = merge_tables(different_T, {.drop_histograms = true});
  ASSERT_TRUE(dropped.has_value());
  EXPECT_FALSE(dropped->tensors.at("a").has_histogram());
  EXPECT_EQ(dropped->tensors.at("a").amax, 3.0);

  const std::vector<CalibrationTable> other_model = {
      a, shard(range(-1.0, 2.0, 3, 2.0, {{1, 3}}), "other")};
  EXPECT_FALSE(merge_tables(other_model).has_value());
  EXPECT_TRUE(merge_tables(other_model, {.force = true}).has_value());

  CalibrationTable extra = a;
  extra.tensors["b"] = a.tensors.at("a");
  const std::vector<CalibrationTable> other_tensors = {a, extra};
  auto t = merge_tables(other_tensors);
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.status().message().find("extra: b"), std::string::npos) << t.status().message();

  CalibrationTable trt = a;
  trt.tensors["a"].min = trt.tensors["a"].max = std::nan("");
  trt.tensors["a"].histogram.clear();
  const std::vector<CalibrationTable> with_trt = {trt, trt};
  EXPECT_FALSE(merge_tables(with_trt).has_value());
}

TEST(ModelCheck, MissingExtraAndHash) {
  CalibrationTable t = shard(range(-1.0, 1.0, 1, 0.0, {}), "abc");
  t.tensors["stale"] = t.tensors["a"];
  const std::vector<std::string> expected = {"a", "new"};
  ModelCheck c = check_model(t, "abc", expected);
  EXPECT_TRUE(c.hash_known);
  EXPECT_TRUE(c.hash_matches);
  EXPECT_EQ(c.missing, std::vector<std::string>{"new"});
  EXPECT_EQ(c.extra, std::vector<std::string>{"stale"});
  EXPECT_FALSE(c.ok());
  EXPECT_EQ(describe(c).size(), 2u);
  EXPECT_FALSE(check_model(t, "xyz", expected).hash_matches);

  Status s = require_same_model(t, "xyz", "cache.json", false);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("cache.json"), std::string::npos);
  EXPECT_NE(s.message().find("abc"), std::string::npos);
  EXPECT_TRUE(require_same_model(t, "xyz", "cache.json", true).is_ok());
  EXPECT_TRUE(require_same_model(t, "abc", "cache.json", false).is_ok());
  t.model.graph_sha256.clear();  // TensorRT caches carry no hash: nothing to compare
  EXPECT_TRUE(require_same_model(t, "xyz", "cache.json", false).is_ok());
  EXPECT_FALSE(check_model(t, "xyz", expected).hash_known);
}

TEST(Formats, NamesAndDetection) {
  for (CacheFormat f :
       {CacheFormat::kJson, CacheFormat::kTensorRT, CacheFormat::kOrtText, CacheFormat::kOrtJson}) {
    EXPECT_EQ(*parse_format(format_name(f)), f);
  }
  EXPECT_FALSE(parse_format("yaml").has_value());
  EXPECT_EQ(detect_format("\xEF\xBB\xBF{\"format\": \"ptqkit-calibration\"}"), CacheFormat::kJson);
  EXPECT_EQ(detect_format("  {\"x\": [1, 2]}"), CacheFormat::kOrtJson);
  EXPECT_EQ(detect_format("TRT-8601-EntropyCalibration2\n"), CacheFormat::kTensorRT);
  EXPECT_EQ(detect_format("x 1.0\n"), CacheFormat::kOrtText);
}

}  // namespace
}  // namespace ptq::calib
