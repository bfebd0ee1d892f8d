// Convolutions with the output channels in the lanes (conv_lanes.cpp) against conv_fast's
// GEMMs (same bits: the same multiply-adds in the same order) and the float64-accumulating
// reference, on random shapes (fixed seeds). 1x1: 5x5 to 28x28 planes (partial row tiles),
// 64-400 input and 40-300 or 32 output channels (partial channel panels; one panel, whose row
// tiles are split between tasks), 1-3 images. Larger kernels: 3x3 (stride 1 or 2) and 5x5 (stride
// 2, dilation 1 or 2) over 5x5 to 16x16 outputs (two rows a tile up to 7 columns), 3-200 input
// channels, 1-2 images. Bias or none, a fused residual + Relu or Clip; the same bits for any
// thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "op_test_util.h"

#include "common/isa_suite.h"
#include "isa_begin.h"
#include "conv.h"
#include "isa_end.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {
namespace {

PTQ_ISA_FIXTURE(OpsConvLanes);

#if PTQ_AVX512

int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

ConvParams pointwise(int64_t n, int64_t c, int64_t m, int64_t h, int64_t w) {
  ConvParams p;
  p.N = n, p.C = c, p.M = m, p.G = 1, p.in = {h, w}, p.out = {h, w};
  p.w.kernel = {1, 1}, p.w.strides = {1, 1}, p.w.dilations = {1, 1}, p.w.pads = {0, 0, 0, 0};
  return p;
}

struct Case {
  ConvParams p;
  std::vector<float> x, w, packed, b, res;
  ConvEpilogue e;
  int64_t out() const { return p.N * p.M * p.out[0] * p.out[1]; }
};

// Data for geometry p (random weights, input, bias or none, epilogue).
Case with_data(std::mt19937& rng, const ConvParams& p) {
  Case c;
  c.p = p;
  const int64_t k = c.p.C * c.p.w.kernel[0] * c.p.w.kernel[1];
  c.x = test::random_floats(rng, c.p.N * c.p.C * c.p.in[0] * c.p.in[1], -1.0f, 1.0f);
  c.w = test::random_floats(rng, c.p.M * k, -1.0f, 1.0f);
  c.packed.resize(static_cast<size_t>(lanes_weight_floats(c.p.M, k)));
  pack_lanes_weights(c.w.data(), c.p.M, k, c.packed.data());
  if (pick(rng, 0, 1) == 1) c.b = test::random_floats(rng, c.p.M, -1.0f, 1.0f);
  c.res = test::random_floats(rng, c.out(), -1.0f, 1.0f);
  const int kind = static_cast<int>(pick(rng, 0, 2));
  if (kind == 1) c.e = {c.res.data(), Activation::kRelu, 0.0f, 0.0f};
  if (kind == 2) c.e = {c.res.data(), Activation::kClip, -2.0f, 3.0f};
  return c;
}

// A random geometry the lanes take (partial channel panels only where they waste less); with
// `one_panel`, 32 output channels (one panel, whose row tiles are cut into blocks).
Case random_case(std::mt19937& rng, bool one_panel = false) {
  const int64_t side[] = {7, 14, 5, 9, 28};
  ConvParams p;
  do {
    const int64_t h = side[pick(rng, 0, 4)];
    p = pointwise(pick(rng, 1, 3), pick(rng, 64, 400), one_panel ? 32 : pick(rng, 40, 300), h, h);
  } while (!conv_lanes_applies(p));
  return with_data(rng, p);
}

// A KxK conv with pads (K - 1) / 2 * dilation whose output is oh x ow.
ConvParams spatial(int64_t n, int64_t c, int64_t m, int64_t kernel, int64_t stride,
                   int64_t dilation, int64_t oh, int64_t ow) {
  ConvParams p;
  const int64_t pad = (kernel - 1) / 2 * dilation, reach = (kernel - 1) * dilation + 1;
  p.N = n, p.C = c, p.M = m, p.G = 1, p.out = {oh, ow};
  p.in = {(oh - 1) * stride + reach - 2 * pad, (ow - 1) * stride + reach - 2 * pad};
  p.w.kernel = {kernel, kernel}, p.w.strides = {stride, stride};
  p.w.dilations = {dilation, dilation}, p.w.pads = {pad, pad, pad, pad};
  return p;
}

// A random larger-kernel geometry the lanes take.
Case random_spatial_case(std::mt19937& rng) {
  ConvParams p;
  do {
    const int64_t kernel = pick(rng, 0, 2) == 0 ? 5 : 3;
    const int64_t stride = kernel == 5 ? 2 : pick(rng, 1, 2);
    const int64_t dilation = kernel == 5 ? pick(rng, 1, 2) : 1;
    p = spatial(pick(rng, 1, 2), pick(rng, 3, 200), pick(rng, 20, 150), kernel, stride, dilation,
                pick(rng, 5, 16), pick(rng, 5, 16));
  } while (!conv_lanes_applies(p));
  return with_data(rng, p);
}

const float* bias(const Case& c) { return c.b.empty() ? nullptr : c.b.data(); }

std::string describe(const Case& c) {
  return "N " + std::to_string(c.p.N) + " C " + std::to_string(c.p.C) + " M " +
         std::to_string(c.p.M) + " kernel " + std::to_string(c.p.w.kernel[0]) + " stride " +
         std::to_string(c.p.w.strides[0]) + " dilation " + std::to_string(c.p.w.dilations[0]) +
         " plane " + std::to_string(c.p.in[0]) + "x" + std::to_string(c.p.in[1]);
}

std::vector<float> lanes(const Case& c, int threads) {
  std::vector<float> y(static_cast<size_t>(c.out()), NAN);
  EXPECT_TRUE(conv_lanes(c.p, c.x.data(), c.packed.data(), bias(c), y.data(), c.e, threads));
  return y;
}

PTQ_ISA_TEST(OpsConvLanes, AppliesToWide1x1ConvsOnSmallPlanes) {
  EXPECT_TRUE(conv_lanes_applies(pointwise(1, 320, 1280, 7, 7)));
  EXPECT_TRUE(conv_lanes_applies(pointwise(32, 576, 96, 14, 14)));
  EXPECT_FALSE(conv_lanes_applies(pointwise(1, 32, 384, 14, 14)));   // few input channels
  EXPECT_FALSE(conv_lanes_applies(pointwise(1, 256, 256, 56, 56)));  // whole panels
  ConvParams padded = pointwise(1, 320, 1280, 7, 7);
  padded.w.pads = {1, 1, 1, 1}, padded.out = {9, 9};
  EXPECT_FALSE(conv_lanes_applies(padded));
  ConvParams grouped = pointwise(1, 320, 1280, 7, 7);
  grouped.G = 2;
  EXPECT_FALSE(conv_lanes_applies(grouped));
}

PTQ_ISA_TEST(OpsConvLanes, AppliesToLargerKernelsWhereTheGemmWastesColumns) {
  EXPECT_TRUE(conv_lanes_applies(spatial(1, 512, 512, 3, 1, 1, 7, 7)));    // ResNet-18 layer 4
  EXPECT_TRUE(conv_lanes_applies(spatial(1, 256, 512, 3, 2, 1, 7, 7)));    // its first conv
  EXPECT_FALSE(conv_lanes_applies(spatial(32, 512, 512, 3, 1, 1, 7, 7)));  // images interleaved
  EXPECT_FALSE(conv_lanes_applies(spatial(1, 3, 64, 7, 2, 1, 112, 112)));  // stem: 3 % wasted
  EXPECT_FALSE(conv_lanes_applies(spatial(64, 256, 256, 3, 2, 1, 7, 7)));  // copies too large
  ConvParams grouped = spatial(1, 512, 512, 3, 1, 1, 7, 7);
  grouped.G = 2;
  EXPECT_FALSE(conv_lanes_applies(grouped));
}

// The lanes against conv_fast (same bits) and, without an epilogue, the reference.
void expect_like_the_gemm(const Case& c, int i) {
  ASSERT_TRUE(conv_lanes_applies(c.p)) << describe(c);
  const std::vector<float> got = lanes(c, 2);
  std::vector<float> gemm(got.size(), NAN);
  ASSERT_TRUE(conv_fast(c.p, c.x.data(), c.w.data(), nullptr, bias(c), gemm.data(), c.e, 2));
  EXPECT_TRUE(test::same_bits(got, gemm)) << "case " << i << ": " << describe(c);
  if (c.e.residual != nullptr) return;  // the reference has no epilogue
  std::vector<float> want(got.size());
  reference::conv<float>(c.p, c.x.data(), c.w.data(), bias(c), want.data());
  // Float32 sums over k taps: a relative L2 error of order 6e-8 * sqrt(k) (1e-6 at k = 300).
  const double k = static_cast<double>(c.p.C * c.p.w.kernel[0] * c.p.w.kernel[1]);
  const auto [err, norm] = test::l2_error_and_norm(got, want);
  EXPECT_LE(err, std::max(1e-6, 6e-8 * std::sqrt(k)) * norm) << "case " << i << ": " << describe(c);
}

PTQ_ISA_TEST(OpsConvLanes, LargerKernelsSameBitsAsTheGemmAndNearTheReference) {
  std::mt19937 rng(77);
  for (int i = 0; i < 12; ++i) expect_like_the_gemm(random_spatial_case(rng), i);
}

PTQ_ISA_TEST(OpsConvLanes, SameBitsAsTheGemmAndNearTheReference) {
  std::mt19937 rng(404);
  for (int i = 0; i < 12; ++i) expect_like_the_gemm(random_case(rng, i % 3 == 0), i);
}

// Also MobileNetV2's 7x7 projection to 160 channels: 5 panels, whose tiles are cut into
// blocks on 2 threads (10 tasks) and not on 1.
PTQ_ISA_TEST(OpsConvLanes, SameBitsForAnyThreadCount) {
  std::mt19937 rng(5);
  for (int i = 0; i < 7; ++i) {
    const Case c = i < 4   ? random_case(rng, i % 2 == 0)
                   : i < 6 ? random_spatial_case(rng)
                           : with_data(rng, pointwise(1, 576, 160, 7, 7));
    const std::vector<float> one = lanes(c, 1);
    for (int t : {2, 3, 16}) {
      EXPECT_TRUE(test::same_bits(one, lanes(c, t))) << describe(c) << " threads " << t;
    }
  }
}

#endif

}  // namespace
}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
