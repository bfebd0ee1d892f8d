// Output metrics (include/ptq/metrics.h): known answers on constructed inputs, and streaming
// (several batches) equal to one pass over everything, on random data with a fixed seed.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "ptq/metrics.h"

namespace ptq::metrics {
namespace {

ir::Tensor floats(ir::Shape shape, const std::vector<float>& v) {
  return ir::make_tensor<float>(std::move(shape), std::span<const float>(v));
}

std::vector<float> random_values(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 2.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(Agreement, IdenticalIsCosineOneInfiniteSqnrZeroDiff) {
  const auto v = random_values(64, 1);
  Agreement a;
  ASSERT_TRUE(a.add(floats({8, 8}, v), floats({8, 8}, v)).is_ok());
  EXPECT_NEAR(a.cosine(), 1.0, 1e-12);
  EXPECT_TRUE(std::isinf(a.sqnr_db()) && a.sqnr_db() > 0);
  EXPECT_EQ(a.max_abs_diff(), 0.0);
  EXPECT_EQ(a.rel_l2(), 0.0);
  EXPECT_EQ(format_metric(a.sqnr_db(), 2), "inf");
}

// t = r + e with e orthogonal to r and |e|^2 = |r|^2 / 100: SQNR exactly 20 dB, cosine
// 1 / sqrt(1.01), rel L2 0.1, max diff max |e|.
TEST(Agreement, KnownNoiseLevel) {
  const std::vector<float> r = {3, 0, 4, 0};   // |r|^2 = 25
  const std::vector<float> e = {0, 0.3f, 0, 0.4f};  // |e|^2 = 0.25, e . r = 0
  std::vector<float> t(4);
  for (size_t i = 0; i < 4; ++i) t[i] = r[i] + e[i];
  Agreement a;
  ASSERT_TRUE(a.add(floats({4}, r), floats({4}, t)).is_ok());
  EXPECT_NEAR(a.sqnr_db(), 20.0, 1e-5);
  EXPECT_NEAR(a.cosine(), 1.0 / std::sqrt(1.01), 1e-7);
  EXPECT_NEAR(a.rel_l2(), 0.1, 1e-7);
  EXPECT_NEAR(a.max_abs_diff(), 0.4, 1e-7);
}

TEST(Agreement, OppositeSignIsCosineMinusOne) {
  Agreement a;
  ASSERT_TRUE(a.add(floats({3}, {1, -2, 3}), floats({3}, {-1, 2, -3})).is_ok());
  EXPECT_NEAR(a.cosine(), -1.0, 1e-12);
  EXPECT_NEAR(a.max_abs_diff(), 6.0, 1e-12);
}

TEST(Agreement, StreamingEqualsOnePass) {
  const auto r = random_values(600, 2);
  auto t = random_values(600, 3);
  for (size_t i = 0; i < t.size(); ++i) t[i] = r[i] + 0.05f * t[i];
  Agreement whole;
  ASSERT_TRUE(whole.add(floats({6, 100}, r), floats({6, 100}, t)).is_ok());
  Agreement parts;
  for (size_t b = 0; b < 6; ++b) {
    std::vector<float> rb(r.begin() + 100 * b, r.begin() + 100 * (b + 1));
    std::vector<float> tb(t.begin() + 100 * b, t.begin() + 100 * (b + 1));
    ASSERT_TRUE(parts.add(floats({1, 100}, rb), floats({1, 100}, tb)).is_ok());
  }
  EXPECT_EQ(parts.count(), 600);
  EXPECT_NEAR(parts.cosine(), whole.cosine(), 1e-12);
  EXPECT_NEAR(parts.sqnr_db(), whole.sqnr_db(), 1e-9);
  EXPECT_EQ(parts.max_abs_diff(), whole.max_abs_diff());
  // And against the definition, in float64 straight from the values.
  double rr = 0, dd = 0, rt = 0, tt = 0, mx = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double d = static_cast<double>(r[i]) - static_cast<double>(t[i]);
    rr += static_cast<double>(r[i]) * r[i];
    tt += static_cast<double>(t[i]) * t[i];
    rt += static_cast<double>(r[i]) * t[i];
    dd += d * d;
    mx = std::max(mx, std::abs(d));
  }
  EXPECT_NEAR(whole.sqnr_db(), 10 * std::log10(rr / dd), 1e-9);
  EXPECT_NEAR(whole.cosine(), rt / std::sqrt(rr * tt), 1e-12);
  EXPECT_EQ(whole.max_abs_diff(), mx);
}

TEST(Agreement, ShapeMismatchAndNaN) {
  Agreement a;
  EXPECT_FALSE(a.add(floats({2}, {1, 2}), floats({1, 2}, {1, 2})).is_ok());
  Agreement n;
  ASSERT_TRUE(n.add(floats({2}, {1, std::nanf("")}), floats({2}, {1, 2})).is_ok());
  EXPECT_TRUE(std::isnan(n.cosine()));
  EXPECT_TRUE(std::isnan(n.sqnr_db()));
  EXPECT_EQ(format_metric(n.sqnr_db(), 2), "nan");
}

TEST(TopK, ArgmaxFirstOnTiesAndTopK) {
  const auto scores = floats({3, 4}, {0, 5, 5, 1,    // tie: argmax 1
                                      9, 1, 2, 3,    // argmax 0
                                      -1, -2, -3, -0.5f});  // argmax 3
  auto top = argmax_rows(scores);
  ASSERT_TRUE(top.has_value()) << top.status().message();
  EXPECT_EQ(*top, (std::vector<int64_t>{1, 0, 3}));
  const std::vector<double> row = {0, 5, 5, 1};
  EXPECT_TRUE(in_top_k(row, 1, 1));
  EXPECT_FALSE(in_top_k(row, 2, 1));  // tie with a lower index counts as better
  EXPECT_TRUE(in_top_k(row, 2, 2));
  EXPECT_FALSE(in_top_k(row, 0, 3));
  EXPECT_TRUE(in_top_k(row, 0, 4));
}

TEST(TopK, AccuracyCountsAndLabelChecks) {
  const auto scores = floats({4, 6}, {6, 5, 4, 3, 2, 1,   // order 0 1 2 3 4 5
                                      1, 2, 3, 4, 5, 6,   // order 5 4 3 2 1 0
                                      0, 0, 9, 0, 0, 0,   // 2 first, ties by index: 0 1 3 4 5
                                      3, 1, 4, 1, 5, 9});  // order 5 4 2 0 1 3
  Accuracy acc({1, 5});
  const std::vector<int64_t> labels = {0, 0, 5, 3};
  ASSERT_TRUE(acc.add(scores, labels).is_ok());
  // Row 0: label 0 is first (top-1, top-5). Row 1: label 0 is last (neither). Row 2: label 5 is
  // 6th (0,1,3,4 tie before it): neither. Row 3: label 3 is 6th: neither.
  EXPECT_EQ(acc.hits(0), 1);
  EXPECT_EQ(acc.hits(1), 1);
  EXPECT_EQ(acc.count(), 4);
  EXPECT_DOUBLE_EQ(acc.accuracy(0), 0.25);
  const std::vector<int64_t> bad = {0, 0, 6, 0};
  Status s = acc.add(scores, bad);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("label 6"), std::string::npos) << s.message();
  const std::vector<int64_t> short_labels = {0};
  EXPECT_FALSE(acc.add(scores, short_labels).is_ok());
}

}  // namespace
}  // namespace ptq::metrics
