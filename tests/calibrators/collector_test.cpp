// The streaming collector: phases, non-finite handling, consistency checks, merging.
#include <limits>

#include <gtest/gtest.h>

#include "ptq/calibrators.h"
#include "samples.h"

namespace ptq::calib {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(Collector, BatchRangeIsSignedMinMaxOverFiniteValues) {
  const std::vector<float> x = {0.5f, -3.25f, kNaN, 2.0f, -kInf, 1.0f};
  const BatchRange r = batch_range(x);
  EXPECT_EQ(r.min, -3.25);
  EXPECT_EQ(r.max, 2.0);
  EXPECT_EQ(r.abs_max, 3.25);
  EXPECT_EQ(r.nonfinite, 2);
  EXPECT_EQ(r.first_nonfinite, 2);
}

TEST(Collector, NegativeZeroNeverLeaksIntoTheBits) {
  const BatchRange a = batch_range(std::vector<float>{-0.0f, 0.0f});
  const BatchRange b = batch_range(std::vector<float>{0.0f, -0.0f});
  EXPECT_FALSE(std::signbit(a.min));
  EXPECT_FALSE(std::signbit(b.min));
  EXPECT_FALSE(std::signbit(a.max));
}

TEST(Collector, NonFiniteIsAnErrorNamingTensorAndSample) {
  Collector c;
  std::vector<float> batch(4 * 10, 1.0f);  // 4 samples of 10 values: samples 20..23
  batch[2 * 10 + 3] = kNaN;                 // in the third sample of the batch
  Status s = c.add_range("conv1/out", batch, {20, 4});
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidInput);
  EXPECT_NE(s.message().find("'conv1/out'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("sample 22"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find('\n'), std::string::npos);
}

TEST(Collector, IgnoreNonFiniteCountsAndSkipsThem) {
  Collector c({.ignore_nonfinite = true});
  const std::vector<float> a = {1.0f, kNaN, -2.0f, kInf};
  const std::vector<float> b = {0.5f, -kInf};
  ASSERT_TRUE(c.add_range("t", a, {0, 1}).is_ok());
  ASSERT_TRUE(c.add_range("t", b, {1, 1}).is_ok());
  ASSERT_TRUE(c.finish_ranges().is_ok());
  ASSERT_TRUE(c.add_histogram("t", a).is_ok());
  ASSERT_TRUE(c.add_histogram("t", b).is_ok());
  EXPECT_EQ(c.nonfinite_total(), 3);
  auto table = c.table({"minmax"});
  ASSERT_TRUE(table.has_value()) << table.status().message();
  const TensorRange& r = table->tensors.at("t");
  EXPECT_EQ(r.count, 3);
  EXPECT_EQ(r.nonfinite, 3);
  EXPECT_EQ(r.amax, 2.0);
  EXPECT_EQ(r.min, -2.0);
  EXPECT_EQ(r.max, 1.0);
  EXPECT_TRUE(table->run.ignore_nonfinite);
  EXPECT_EQ(r.histogram[2047], 1u);  // |-2| = T
}

TEST(Collector, PhasesAreEnforced) {
  Collector c;
  const std::vector<float> x = {1.0f, -1.0f};
  EXPECT_FALSE(c.add_histogram("t", x).is_ok());  // never seen in the range pass
  ASSERT_TRUE(c.add_range("t", x, {0, 1}).is_ok());
  EXPECT_FALSE(c.add_histogram("t", x).is_ok());  // range pass not finished
  ASSERT_TRUE(c.finish_ranges().is_ok());
  EXPECT_FALSE(c.add_range("t", x, {0, 1}).is_ok());
  EXPECT_FALSE(c.finish_ranges().is_ok());
  EXPECT_FALSE(c.add_histogram("other", x).is_ok());
}

TEST(Collector, DifferentDataInThePassesIsCaught) {
  Collector c;
  const std::vector<float> x = {1.0f, -1.0f, 0.25f};
  ASSERT_TRUE(c.add_range("t", x, {0, 1}).is_ok());
  ASSERT_TRUE(c.finish_ranges().is_ok());
  ASSERT_TRUE(c.add_histogram("t", std::span<const float>(x).first(2)).is_ok());
  auto table = c.table({"entropy"});
  ASSERT_FALSE(table.has_value());
  EXPECT_NE(table.status().message().find("same samples"), std::string::npos);
}

TEST(Collector, HistogramMethodsNeedThePass) {
  Collector c;
  const std::vector<float> x = {1.0f, -1.0f};
  ASSERT_TRUE(c.add_range("t", x, {0, 1}).is_ok());
  ASSERT_TRUE(c.finish_ranges().is_ok());
  EXPECT_FALSE(c.table({"entropy"}).has_value());
  auto minmax = c.table({"minmax"});
  ASSERT_TRUE(minmax.has_value());
  EXPECT_EQ(minmax->tensors.at("t").amax, 1.0);
  EXPECT_FALSE(minmax->tensors.at("t").has_histogram());
}

TEST(Collector, FillCallbackGetsTheFixedRange) {
  Collector c;
  const std::vector<float> x = {0.75f, -3.0f};
  ASSERT_TRUE(c.add_range("t", x, {0, 1}).is_ok());
  ASSERT_TRUE(c.finish_ranges().is_ok());
  double seen = -1.0;
  ASSERT_TRUE(c.add_histogram("t", [&](double T, std::span<uint64_t> counts) {
                 seen = T;
                 add_to_histogram(x, T, counts);
               }).is_ok());
  EXPECT_EQ(seen, 3.0);
  EXPECT_EQ(c.range("t"), 3.0);
  EXPECT_EQ(c.range("nope"), std::nullopt);
}

TEST(Collector, CommonRangeMustCoverTheData) {
  TensorCollector t("t", {});
  const std::vector<float> x = {2.0f};
  ASSERT_TRUE(t.add_range(x, {0, 1}).is_ok());
  Status s = t.finish_ranges(1.5);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("'t'"), std::string::npos);
  TensorCollector u("t", {});
  ASSERT_TRUE(u.add_range(x, {0, 1}).is_ok());
  ASSERT_TRUE(u.finish_ranges(4.0).is_ok());
  ASSERT_TRUE(u.add_histogram(x).is_ok());
  EXPECT_EQ(u.counts()[1024], 1u);  // 2 / 4 * 2048
}

TEST(Collector, MergeAddsStatistics) {
  const std::vector<float> a = testing::make_samples(testing::Dist::kLaplace, 5000, 1);
  const std::vector<float> b = testing::make_samples(testing::Dist::kLaplace, 7000, 2);
  std::vector<float> all = a;
  all.insert(all.end(), b.begin(), b.end());

  TensorCollector whole("t", {});
  ASSERT_TRUE(whole.add_range(all, {0, 1}).is_ok());
  ASSERT_TRUE(whole.finish_ranges().is_ok());
  ASSERT_TRUE(whole.add_histogram(all).is_ok());

  // Phase 1 apart, merged to fix T, then phase 2 apart with that T, merged again.
  TensorCollector ra("t", {}), rb("t", {});
  ASSERT_TRUE(ra.add_range(a, {0, 1}).is_ok());
  ASSERT_TRUE(rb.add_range(b, {1, 1}).is_ok());
  TensorCollector ranges = ra;
  ASSERT_TRUE(ranges.merge(rb).is_ok());
  ASSERT_TRUE(ra.finish_ranges(ranges.abs_max()).is_ok());
  ASSERT_TRUE(rb.finish_ranges(ranges.abs_max()).is_ok());
  ASSERT_TRUE(ra.add_histogram(a).is_ok());
  ASSERT_TRUE(rb.add_histogram(b).is_ok());
  ASSERT_TRUE(ra.merge(rb).is_ok());
  EXPECT_EQ(ra.counts(), whole.counts());
  EXPECT_EQ(ra.count(), whole.count());
  EXPECT_EQ(ra.result({"entropy"})->amax, whole.result({"entropy"})->amax);

  // Phase-2 collectors over different ranges do not merge.
  TensorCollector other("t", {});
  ASSERT_TRUE(other.add_range(b, {0, 1}).is_ok());
  ASSERT_TRUE(other.finish_ranges().is_ok());
  TensorCollector mine("t", {});
  ASSERT_TRUE(mine.add_range(a, {0, 1}).is_ok());
  ASSERT_TRUE(mine.finish_ranges().is_ok());
  EXPECT_FALSE(mine.merge(other).is_ok());
  EXPECT_FALSE(mine.merge(TensorCollector("u", {})).is_ok());
}

}  // namespace
}  // namespace ptq::calib
