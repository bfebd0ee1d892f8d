// The Winograd F(2x2, 3x3) convolution (conv_winograd.cpp) against the float64-accumulating
// reference conv on random shapes (fixed seeds): odd and even output sizes (partial tiles),
// asymmetric pads up to 2, 32-64 input and 32-150 output channels (several row chunks), 1-4 images
// (blocks of tiles spanning images); bit-identical for any thread count and for each image
// alone, and its fused residual + activation bit-identical to the separate ops.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "op_test_util.h"

#include "common/isa_suite.h"
#include "isa_begin.h"
#include "conv.h"
#include "gemm_packed.h"
#include "isa_end.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {
namespace {

PTQ_ISA_FIXTURE(OpsConvWinograd);

struct Case {
  ConvParams p;
  std::vector<float> x, w, packed, b, res;
};

#if PTQ_AVX512  // the kernel exists at the AVX-512 level only
int64_t pick(std::mt19937& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

ConvParams geometry(int64_t n, int64_t c, int64_t m, int64_t h, int64_t w,
                    const std::vector<int64_t>& pads) {
  ConvParams p;
  p.N = n, p.C = c, p.M = m, p.G = 1, p.in = {h, w};
  p.w.kernel = {3, 3}, p.w.strides = {1, 1}, p.w.dilations = {1, 1}, p.w.pads = pads;
  p.out = {h + pads[0] + pads[2] - 2, w + pads[1] + pads[3] - 2};
  return p;
}

Case with_data(std::mt19937& rng, const ConvParams& p) {
  Case c;
  c.p = p;
  c.x = test::random_floats(rng, p.N * p.C * p.in[0] * p.in[1], -1.0f, 1.0f);
  c.w = test::random_floats(rng, p.M * p.C * 9, -1.0f, 1.0f);
  c.packed.resize(static_cast<size_t>(winograd_weight_floats(p.M, p.C)));
  pack_winograd_weights(c.w.data(), p.M, p.C, c.packed.data());
  if (pick(rng, 0, 1) == 1) c.b = test::random_floats(rng, p.M, -1.0f, 1.0f);
  c.res = test::random_floats(rng, p.N * p.M * p.out[0] * p.out[1], -1.0f, 1.0f);
  return c;
}

Case random_case(std::mt19937& rng) {
  const std::vector<int64_t> pads = {pick(rng, 0, 2), pick(rng, 0, 2), pick(rng, 0, 2),
                                     pick(rng, 0, 2)};
  return with_data(rng, geometry(pick(rng, 1, 4), pick(rng, 32, 64), pick(rng, 32, 150),
                                 pick(rng, 10, 25), pick(rng, 10, 33), pads));
}

const float* bias(const Case& c) { return c.b.empty() ? nullptr : c.b.data(); }

std::vector<float> run(const Case& c, const ConvEpilogue& e, int threads) {
  std::vector<float> y(static_cast<size_t>(c.p.N * c.p.M * c.p.out[0] * c.p.out[1]), NAN);
  EXPECT_TRUE(conv_winograd(c.p, c.x.data(), c.packed.data(), bias(c), y.data(), e, threads));
  return y;
}

using test::same_bits;

std::string describe(const Case& c) {
  return "N " + std::to_string(c.p.N) + " C " + std::to_string(c.p.C) + " M " +
         std::to_string(c.p.M) + " in " + std::to_string(c.p.in[0]) + "x" +
         std::to_string(c.p.in[1]) + " out " + std::to_string(c.p.out[0]) + "x" +
         std::to_string(c.p.out[1]);
}

PTQ_ISA_TEST(OpsConvWinograd, AppliesToWide3x3Stride1Only) {
  EXPECT_TRUE(conv_winograd_applies(geometry(1, 64, 64, 56, 56, {1, 1, 1, 1})));
  ConvParams p = geometry(1, 64, 64, 56, 56, {1, 1, 1, 1});
  p.w.strides = {2, 2};
  EXPECT_FALSE(conv_winograd_applies(p));
  p = geometry(1, 64, 64, 56, 56, {1, 1, 1, 1});
  p.w.dilations = {2, 2};
  EXPECT_FALSE(conv_winograd_applies(p));
  p = geometry(1, 64, 64, 56, 56, {1, 1, 1, 1});
  p.G = 2;
  EXPECT_FALSE(conv_winograd_applies(p));
  EXPECT_FALSE(conv_winograd_applies(geometry(1, 16, 64, 56, 56, {1, 1, 1, 1})));  // narrow
  EXPECT_FALSE(conv_winograd_applies(geometry(1, 512, 512, 7, 7, {1, 1, 1, 1})));  // 7x7 out
}

// The packed weights hold G g G^T (computed here in float64 as the matrix product) of each
// filter, in pack_a's layout for each of the 16 positions, the last panel's missing rows zero.
PTQ_ISA_TEST(OpsConvWinograd, PackedWeightsAreTheTransformedFiltersPacked) {
  std::mt19937 rng(3);
  const int64_t m = 19, c = 5;  // 19 rows: a partial second micro-panel
  const std::vector<float> w = test::random_floats(rng, m * c * 9, -1.0f, 1.0f);
  std::vector<float> got(static_cast<size_t>(winograd_weight_floats(m, c)), NAN);
  pack_winograd_weights(w.data(), m, c, got.data());
  const double g[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const int64_t stride = packed_a_floats(m, c);
  for (int xi = 0; xi < 16; ++xi) {
    std::vector<float> u(static_cast<size_t>(m * c));
    for (int64_t f = 0; f < m * c; ++f) {
      double v = 0.0;
      for (int k = 0; k < 3; ++k) {
        for (int l = 0; l < 3; ++l) v += g[xi / 4][k] * w[f * 9 + k * 3 + l] * g[xi % 4][l];
      }
      u[static_cast<size_t>(f)] = static_cast<float>(v);
    }
    std::vector<float> want(static_cast<size_t>(stride));
    pack_a(false, m, c, u.data(), c, want.data());
    for (int64_t i = 0; i < stride; ++i) {
      EXPECT_NEAR(got[xi * stride + i], want[i], 1e-6 * (1.0 + std::fabs(want[i])))
          << "position " << xi << " float " << i;
    }
  }
}

PTQ_ISA_TEST(OpsConvWinograd, MatchesReferenceOnRandomShapes) {
  std::mt19937 rng(2026);
  for (int i = 0; i < 8; ++i) {
    const Case c = random_case(rng);
    ASSERT_TRUE(conv_winograd_applies(c.p)) << describe(c);
    const std::vector<float> got = run(c, {}, 2);
    std::vector<float> want(got.size());
    reference::conv<float>(c.p, c.x.data(), c.w.data(), bias(c), want.data());
    const auto [err, norm] = test::l2_error_and_norm(got, want);
    // Sums of up to 576 products of [-1, 1] values: the transforms' rounding adds a few float32
    // ulps of the partial sums (measured: 2.8e-7 relative at most, where the direct sum is at
    // ~1e-7).
    EXPECT_LE(err, 1e-6 * norm) << "case " << i << ": " << describe(c);
  }
}

PTQ_ISA_TEST(OpsConvWinograd, BitIdenticalForAnyThreadCountAndEachImageAlone) {
  std::mt19937 rng(9);
  for (int i = 0; i < 8; ++i) {
    Case c = random_case(rng);
    if (c.p.N == 1) {
      c = with_data(rng, geometry(3, c.p.C, c.p.M, c.p.in[0], c.p.in[1], c.p.w.pads));
    }
    const ConvEpilogue e{c.res.data(), Activation::kRelu, 0.0f, 0.0f};
    const std::vector<float> all = run(c, e, 1);
    for (int t : {2, 3, 16}) EXPECT_TRUE(same_bits(all, run(c, e, t))) << "threads " << t;
    const size_t in = static_cast<size_t>(c.p.C * c.p.in[0] * c.p.in[1]);
    const size_t out = static_cast<size_t>(c.p.M * c.p.out[0] * c.p.out[1]);
    for (int64_t n = 0; n < c.p.N; ++n) {
      Case one = c;
      one.p.N = 1;
      one.x.assign(c.x.begin() + n * in, c.x.begin() + (n + 1) * in);
      one.res.assign(c.res.begin() + n * out, c.res.begin() + (n + 1) * out);
      const std::vector<float> alone = run(one, {one.res.data(), Activation::kRelu, 0, 0}, 2);
      const std::vector<float> mine(all.begin() + n * out, all.begin() + (n + 1) * out);
      EXPECT_TRUE(same_bits(mine, alone)) << describe(c) << " image " << n;
    }
  }
}

// Fused: (sum + bias) + residual, then the activation, as the separate Add and Relu / Clip
// kernels compute them from the unfused output.
PTQ_ISA_TEST(OpsConvWinograd, FusedEpilogueEqualsSeparateOps) {
  std::mt19937 rng(41);
  for (int i = 0; i < 6; ++i) {
    const Case c = random_case(rng);
    const std::vector<float> plain = run(c, {}, 2);
    for (Activation act : {Activation::kRelu, Activation::kClip}) {
      const ConvEpilogue e{c.res.data(), act, -0.25f, 0.5f};
      std::vector<float> want(plain.size());
      for (size_t k = 0; k < plain.size(); ++k) {
        want[k] = activate(plain[k] + c.res[k], act, e.lo, e.hi);
      }
      EXPECT_TRUE(same_bits(run(c, e, 2), want)) << describe(c) << " act " << int(act);
    }
  }
}

#endif

}  // namespace
}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
