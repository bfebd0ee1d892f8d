// Table-level operations with the methods: re-calibrating from stored histograms equals
// calibrating from scratch; the two-phase sharded flow merged equals all data at once.
#include <gtest/gtest.h>

#include "ptq/calib_cache.h"
#include "ptq/calibrators.h"
#include "samples.h"

namespace ptq::calib {
namespace {

using testing::Dist;

// Three tensors' values for one shard of the data.
std::map<std::string, std::vector<float>> shard_data(uint64_t seed) {
  return {{"a", testing::make_samples(Dist::kGaussianOutliers, 30000, seed)},
          {"b/relu:0", testing::make_samples(Dist::kRelu, 20000, seed + 100)},
          {"c", testing::make_samples(Dist::kLaplace, 25000, seed + 200)}};
}

Status add_ranges(Collector& c, const std::map<std::string, std::vector<float>>& data) {
  for (const auto& [name, v] : data) PTQ_RETURN_IF_ERROR(c.add_range(name, v, {0, 1}));
  return {};
}
Status add_histograms(Collector& c, const std::map<std::string, std::vector<float>>& data) {
  for (const auto& [name, v] : data) PTQ_RETURN_IF_ERROR(c.add_histogram(name, v));
  return {};
}

CalibrationTable calibrate_all(const std::vector<std::map<std::string, std::vector<float>>>& shards,
                               const MethodConfig& method) {
  Collector c;
  for (const auto& s : shards) EXPECT_TRUE(add_ranges(c, s).is_ok());
  EXPECT_TRUE(c.finish_ranges().is_ok());
  for (const auto& s : shards) EXPECT_TRUE(add_histograms(c, s).is_ok());
  auto t = c.table(method);
  EXPECT_TRUE(t.has_value()) << t.status().message();
  return *t;
}

void expect_same_tensors(const CalibrationTable& a, const CalibrationTable& b) {
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (const auto& [name, r] : a.tensors) {
    SCOPED_TRACE(name);
    const TensorRange& o = b.tensors.at(name);
    EXPECT_EQ(r.amax, o.amax);
    EXPECT_EQ(r.min, o.min);
    EXPECT_EQ(r.max, o.max);
    EXPECT_EQ(r.count, o.count);
    EXPECT_EQ(r.hist_max, o.hist_max);
    EXPECT_EQ(r.histogram, o.histogram);
  }
}

TEST(Recalibrate, FromStoredHistogramsEqualsCalibratingFromScratch) {
  const std::vector shards = {shard_data(1), shard_data(2)};
  const CalibrationTable entropy = calibrate_all(shards, {"entropy"});
  // Through the JSON file, as `ptq cache convert --method` does.
  auto stored = parse_json_cache(json_cache_string(entropy), "entropy.json");
  ASSERT_TRUE(stored.has_value()) << stored.status().message();
  for (const MethodConfig& m : {MethodConfig{"percentile", 99.9}, MethodConfig{"mse"},
                                MethodConfig{"minmax"}, MethodConfig{"entropy"}}) {
    SCOPED_TRACE(m.name);
    CalibrationTable recomputed = *stored;
    ASSERT_TRUE(recalibrate(recomputed, m).is_ok());
    const CalibrationTable scratch = calibrate_all(shards, m);
    EXPECT_EQ(json_cache_string(recomputed), json_cache_string(scratch));
  }
}

TEST(Recalibrate, NeedsHistograms) {
  CalibrationTable t;
  t.method = "entropy";
  t.tensors["x"] = TensorRange{.amax = 1.0, .min = -1.0, .max = 0.5, .count = 10};
  Status s = recalibrate(t, {"mse"});
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("'x'"), std::string::npos);
  ASSERT_TRUE(recalibrate(t, {"minmax"}).is_ok());  // min-max needs only min/max
  EXPECT_EQ(t.tensors["x"].amax, 1.0);
  EXPECT_EQ(t.method, "minmax");
}

TEST(Shards, TwoPhaseFlowMergedEqualsAllDataAtOnce) {
  const std::vector shards = {shard_data(11), shard_data(12), shard_data(13)};
  const MethodConfig method{"entropy"};

  // Phase 1 on every shard: a ranges table each, merged into the common ranges.
  std::vector<CalibrationTable> range_tables;
  for (const auto& s : shards) {
    Collector c;
    ASSERT_TRUE(add_ranges(c, s).is_ok());
    range_tables.push_back(c.ranges_table());
    range_tables.back().model.graph_sha256 = "abc";
  }
  auto common = merge_tables(range_tables);
  ASSERT_TRUE(common.has_value()) << common.status().message();
  auto common_file = parse_json_cache(json_cache_string(*common), "ranges.json");
  ASSERT_TRUE(common_file.has_value());

  // Phase 2 on every shard with T from the common ranges (phase 1 restored from its table).
  std::vector<CalibrationTable> hist_tables;
  for (size_t i = 0; i < shards.size(); ++i) {
    Collector c;
    ASSERT_TRUE(c.restore_ranges(range_tables[i]).is_ok());
    ASSERT_TRUE(c.finish_ranges(&*common_file).is_ok());
    ASSERT_TRUE(add_histograms(c, shards[i]).is_ok());
    auto t = c.table(method);
    ASSERT_TRUE(t.has_value()) << t.status().message();
    t->model.graph_sha256 = "abc";
    auto reread = parse_json_cache(json_cache_string(*t), fmt::format("shard{}.json", i));
    ASSERT_TRUE(reread.has_value());
    hist_tables.push_back(*reread);
  }
  auto merged = merge_calibrations(hist_tables);
  ASSERT_TRUE(merged.has_value()) << merged.status().message();
  EXPECT_EQ(merged->method, "entropy");
  EXPECT_EQ(merged->provenance.at("merged_shards"), "3");
  expect_same_tensors(*merged, calibrate_all(shards, method));

  // Any method can be applied at merge time.
  const MethodConfig mse{"mse"};
  auto merged_mse = merge_calibrations(hist_tables, &mse);
  ASSERT_TRUE(merged_mse.has_value());
  expect_same_tensors(*merged_mse, calibrate_all(shards, mse));
}

TEST(Shards, HistogramsOverDifferentRangesAreRefused) {
  std::vector<CalibrationTable> tables;
  for (uint64_t seed : {21, 22}) {
    Collector c;  // each shard fixed its own T: not mergeable
    const auto data = shard_data(seed);
    ASSERT_TRUE(add_ranges(c, data).is_ok());
    ASSERT_TRUE(c.finish_ranges().is_ok());
    ASSERT_TRUE(add_histograms(c, data).is_ok());
    tables.push_back(*c.table({"entropy"}));
  }
  auto merged = merge_calibrations(tables);
  ASSERT_FALSE(merged.has_value());
  EXPECT_NE(merged.status().message().find("common range"), std::string::npos)
      << merged.status().message();
  // Dropping the histograms gives the exact min-max merge instead.
  auto ranges = merge_calibrations(tables, nullptr, {.drop_histograms = true});
  ASSERT_TRUE(ranges.has_value()) << ranges.status().message();
  EXPECT_EQ(ranges->method, "minmax");
  EXPECT_FALSE(ranges->has_histograms());
  EXPECT_EQ(ranges->tensors.at("a").amax,
            std::max(tables[0].tensors.at("a").abs_max(), tables[1].tensors.at("a").abs_max()));
  const MethodConfig entropy{"entropy"};
  EXPECT_FALSE(merge_calibrations(tables, &entropy, {.drop_histograms = true}).has_value());
}

TEST(Shards, DifferentMethodsNeedAnExplicitOne) {
  const auto data = shard_data(31);
  CalibrationTable a = calibrate_all({data}, {"entropy"});
  CalibrationTable b = calibrate_all({data}, {"mse"});
  const std::vector<CalibrationTable> both = {a, b};
  auto merged = merge_calibrations(both);
  ASSERT_FALSE(merged.has_value());
  EXPECT_EQ(merged.status().code(), StatusCode::kUsage);
  const MethodConfig mse{"mse"};
  auto with_method = merge_calibrations(both, &mse);
  ASSERT_TRUE(with_method.has_value());
  EXPECT_EQ(with_method->tensors.at("c").count, 2 * 25000);
}

}  // namespace
}  // namespace ptq::calib
