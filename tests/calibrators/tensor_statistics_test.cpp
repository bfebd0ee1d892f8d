// HostTensorStatistics (the parallel CPU variant) against the serial reference in
// calibrators/histogram.cpp, for several thread counts, with NaN/Inf and signed zeros.
#include <limits>

#include <gtest/gtest.h>

#include "ptq/calibrators.h"
#include "samples.h"
#include "tensor_statistics.h"

namespace ptq::calib {
namespace {

ir::Tensor big_tensor(bool with_nonfinite) {
  const std::vector<float> v = testing::make_samples(testing::Dist::kHeavyTail, 300001, 77);
  ir::Tensor t = ir::make_tensor<float>({300001}, v);
  float* p = t.data<float>();
  p[0] = -0.0f;
  if (with_nonfinite) {
    p[123457] = std::numeric_limits<float>::quiet_NaN();
    p[200000] = -std::numeric_limits<float>::infinity();
    p[299999] = std::numeric_limits<float>::infinity();
  }
  return t;
}

TEST(HostTensorStatistics, EqualsTheSerialReferenceForAnyThreadCount) {
  for (bool nonfinite : {false, true}) {
    const ir::Tensor t = big_tensor(nonfinite);
    const BatchRange want = batch_range(t.span<float>());
    HistogramCounts want_counts{};
    add_to_histogram(t.span<float>(), want.abs_max, want_counts);
    for (int threads : {1, 2, 3, 8}) {
      SCOPED_TRACE(fmt::format("threads {} nonfinite {}", threads, nonfinite));
      runtime::cpu::HostTensorStatistics stats(t, threads);
      const runtime::MinMaxStats got = stats.minmax();
      EXPECT_EQ(got.min, want.min);
      EXPECT_EQ(got.max, want.max);
      EXPECT_EQ(got.abs_max, want.abs_max);
      EXPECT_EQ(got.nonfinite, want.nonfinite);
      EXPECT_EQ(got.first_nonfinite, want.first_nonfinite);
      HistogramCounts counts{};
      stats.histogram(want.abs_max, counts);
      EXPECT_EQ(counts, want_counts);
      // histogram() adds to what is there.
      stats.histogram(want.abs_max, counts);
      EXPECT_EQ(counts[2047], 2 * want_counts[2047]);
    }
    EXPECT_EQ(want.nonfinite, nonfinite ? 3 : 0);
  }
}

TEST(HostTensorStatistics, Float16AndZeroRange) {
  ir::Tensor h(ir::DType::kFloat16, {3});
  h.data<uint16_t>()[0] = ir::float_to_half(-0.0f);
  h.data<uint16_t>()[1] = ir::float_to_half(0.0f);
  h.data<uint16_t>()[2] = ir::float_to_half(0.0f);
  runtime::cpu::HostTensorStatistics stats(h, 2);
  const runtime::MinMaxStats mm = stats.minmax();
  EXPECT_EQ(mm.abs_max, 0.0);
  EXPECT_FALSE(std::signbit(mm.min));
  HistogramCounts counts{};
  stats.histogram(0.0, counts);
  EXPECT_EQ(counts[0], 3u);

  ir::Tensor f(ir::DType::kFloat16, {2});
  f.data<uint16_t>()[0] = ir::float_to_half(1.5f);
  f.data<uint16_t>()[1] = ir::float_to_half(-3.0f);
  runtime::cpu::HostTensorStatistics fs(f, 1);
  EXPECT_EQ(fs.minmax().min, -3.0);
  EXPECT_EQ(fs.minmax().abs_max, 3.0);
  HistogramCounts c2{};
  fs.histogram(3.0, c2);
  EXPECT_EQ(c2[1024], 1u);
  EXPECT_EQ(c2[2047], 1u);
}

// Values on and next to every bin edge (k * T / 2048 and their float neighbours), T itself,
// values above T and tiny ones: the binning without a division per value must put each where
// the spec's division does.
TEST(HostTensorStatistics, BinEdgesMatchTheDivision) {
  for (float T : {3.7f, 1.0f, 0.0123f, 6.5e-39f}) {
    std::vector<float> v;
    for (int k = 0; k <= 2048; ++k) {
      const float edge = static_cast<float>(static_cast<double>(k) * T / 2048.0);
      for (float x : {edge, std::nextafter(edge, 0.0f), std::nextafter(edge, 1e30f)}) {
        v.push_back(x);
        v.push_back(-x);
      }
    }
    for (float x : {T, 2 * T, 1e30f, std::numeric_limits<float>::denorm_min()}) v.push_back(x);
    const ir::Tensor t = ir::make_tensor<float>({static_cast<int64_t>(v.size())}, v);
    HistogramCounts want{};
    add_to_histogram(t.span<float>(), T, want);
    for (int threads : {1, 2}) {
      SCOPED_TRACE(fmt::format("T {} threads {}", T, threads));
      HistogramCounts got{};
      runtime::cpu::HostTensorStatistics(t, threads).histogram(T, got);
      EXPECT_EQ(got, want);
    }
  }
}

// Long runs of one bin (the zeros of a ReLU output) go through 16-bit per-chunk counters:
// the totals must not wrap, whatever the thread count.
TEST(HostTensorStatistics, LongRunsOfOneBinDoNotWrap) {
  const int64_t n = 300001;
  ir::Tensor t(ir::DType::kFloat32, {n});
  float* p = t.data<float>();
  for (int64_t i = 0; i < n; ++i) p[i] = i % 1000 == 0 ? 4.0f : 0.0f;
  for (int threads : {1, 2}) {
    HistogramCounts counts{};
    runtime::cpu::HostTensorStatistics(t, threads).histogram(4.0, counts);
    EXPECT_EQ(counts[0], 300000u - 300u);
    EXPECT_EQ(counts[2047], 301u);
  }
}

}  // namespace
}  // namespace ptq::calib
