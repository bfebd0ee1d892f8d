// Weight ranges per output channel, checked against a naive float64 loop.
#include <gtest/gtest.h>

#include "ptq/calibrators.h"
#include "samples.h"

namespace ptq::calib {
namespace {

ir::Tensor random_weight(ir::Shape shape, uint64_t seed) {
  ir::Tensor w(ir::DType::kFloat32, shape);
  const std::vector<float> v =
      testing::make_samples(testing::Dist::kLaplace, static_cast<size_t>(w.size()), seed);
  std::copy(v.begin(), v.end(), w.data<float>());
  return w;
}

TEST(Weights, PerChannelMaxAbsAlongAnyAxis) {
  const ir::Tensor w = random_weight({6, 3, 2, 5}, 4);
  for (int64_t axis : {0, 1, 3, -1}) {
    SCOPED_TRACE(axis);
    auto amax = weight_amax(w, axis, {"minmax"}, "conv.weight");
    ASSERT_TRUE(amax.has_value()) << amax.status().message();
    const int64_t a = axis < 0 ? axis + 4 : axis;
    std::vector<double> want(static_cast<size_t>(w.dim(a)), 0.0);
    for (int64_t i0 = 0; i0 < 6; ++i0)
      for (int64_t i1 = 0; i1 < 3; ++i1)
        for (int64_t i2 = 0; i2 < 2; ++i2)
          for (int64_t i3 = 0; i3 < 5; ++i3) {
            const int64_t idx[4] = {i0, i1, i2, i3};
            const double v = w.data<float>()[((i0 * 3 + i1) * 2 + i2) * 5 + i3];
            double& m = want[static_cast<size_t>(idx[a])];
            m = std::max(m, std::fabs(v));
          }
    EXPECT_EQ(*amax, want);
  }
  auto whole = weight_amax(w, std::nullopt, {"minmax"}, "w");
  ASSERT_TRUE(whole.has_value());
  ASSERT_EQ(whole->size(), 1u);
  double m = 0.0;
  for (float v : w.span<float>()) m = std::max(m, std::fabs(static_cast<double>(v)));
  EXPECT_EQ((*whole)[0], m);
}

TEST(Weights, PercentileAndMseUseTheChannelsOwnHistogram) {
  const ir::Tensor w = random_weight({4, 5000}, 9);
  for (const MethodConfig& m : {MethodConfig{"percentile", 99.0}, MethodConfig{"mse"}}) {
    auto amax = weight_amax(w, 0, m, "fc.weight");
    ASSERT_TRUE(amax.has_value()) << amax.status().message();
    for (int64_t c = 0; c < 4; ++c) {
      const std::span<const float> row(w.data<float>() + c * 5000, 5000);
      TensorCollector t("row", {});
      ASSERT_TRUE(t.add_range(row, {0, 1}).is_ok());
      ASSERT_TRUE(t.finish_ranges().is_ok());
      ASSERT_TRUE(t.add_histogram(row).is_ok());
      EXPECT_EQ((*amax)[static_cast<size_t>(c)], t.result(m)->amax) << m.name << " channel " << c;
      EXPECT_LT((*amax)[static_cast<size_t>(c)], t.range());
    }
  }
}

TEST(Weights, Float16WeightsAndErrors) {
  ir::Tensor h(ir::DType::kFloat16, {2, 2});
  const float vals[] = {0.5f, -1.5f, 2.25f, -0.125f};
  for (int i = 0; i < 4; ++i) h.data<uint16_t>()[i] = ir::float_to_half(vals[i]);
  auto amax = weight_amax(h, 0, {"minmax"}, "w16");
  ASSERT_TRUE(amax.has_value());
  EXPECT_EQ(*amax, (std::vector<double>{1.5, 2.25}));

  ir::Tensor bad(ir::DType::kFloat32, {2, 2});
  bad.data<float>()[3] = std::numeric_limits<float>::infinity();
  auto e = weight_amax(bad, 0, {"minmax"}, "fc.weight");
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.status().message().find("'fc.weight'"), std::string::npos);
  EXPECT_NE(e.status().message().find("element 3"), std::string::npos);
  EXPECT_FALSE(weight_amax(bad, 2, {"minmax"}, "w").has_value());
  auto entropy = weight_amax(h, 0, {"entropy"}, "w");
  ASSERT_FALSE(entropy.has_value());
  EXPECT_EQ(entropy.status().message(),
            "weight method must be minmax, mse or percentile, not 'entropy'");
  ir::Tensor ints(ir::DType::kInt32, {2});
  EXPECT_FALSE(weight_amax(ints, 0, {"minmax"}, "w").has_value());
}

}  // namespace
}  // namespace ptq::calib
