// The in-place depthwise 3x3 kernel (depthwise3x3.cpp) against the float64-accumulating
// reference conv on random shapes (fixed seeds): borders, strides 1 and 2, asymmetric pads,
// channel multipliers, narrow and wide planes; bit-identical for any thread count, and its
// fused residual + activation bit-identical to the separate Add and Relu / Clip.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "op_test_util.h"

#include "common/isa_suite.h"
#include "isa_begin.h"
#include "conv.h"
#include "isa_end.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {
namespace {

PTQ_ISA_FIXTURE(OpsDepthwise3x3);

struct Case {
  ConvParams p;
  std::vector<float> x, w, b, res;
};

std::vector<float> randoms(std::mt19937& rng, int64_t n) {
  return test::random_floats(rng, n, -2.0f, 2.0f);
}

// A random depthwise 3x3 geometry the kernel takes (output at least 1 x 1).
Case random_case(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Case c;
  ConvParams& p = c.p;
  const int64_t s = pick(1, 2);
  p.N = pick(1, 2);
  p.C = p.G = pick(1, 6);
  p.M = p.C * pick(1, 2);
  p.w.kernel = {3, 3};
  p.w.strides = {s, s};
  p.w.dilations = {1, 1};
  p.w.pads = {pick(0, 2), pick(0, 2), pick(0, 2), pick(0, 2)};
  p.in = {pick(1, 40), pick(1, 40)};
  for (size_t i = 0; i < 2; ++i) {
    const int64_t span = p.in[i] + p.w.pads[i] + p.w.pads[i + 2] - 3;
    if (span < 0) p.w.pads[i + 2] += -span;  // at least one output
    p.out.push_back((p.in[i] + p.w.pads[i] + p.w.pads[i + 2] - 3) / s + 1);
  }
  c.x = randoms(rng, p.N * p.C * p.in[0] * p.in[1]);
  c.w = randoms(rng, p.M * 9);
  if (pick(0, 1) == 1) c.b = randoms(rng, p.M);
  c.res = randoms(rng, p.N * p.M * p.out[0] * p.out[1]);
  return c;
}

int64_t out_size(const ConvParams& p) { return p.N * p.M * p.out[0] * p.out[1]; }

#if PTQ_AVX512  // the kernel exists at the AVX-512 level only
const float* bias(const Case& c) { return c.b.empty() ? nullptr : c.b.data(); }

std::vector<float> run(const Case& c, const ConvEpilogue& e, int threads) {
  std::vector<float> y(static_cast<size_t>(out_size(c.p)), NAN);
  EXPECT_TRUE(depthwise3x3(c.p, c.x.data(), c.w.data(), bias(c), y.data(), e, threads));
  return y;
}

using test::same_bits;

PTQ_ISA_TEST(OpsDepthwise3x3, MatchesReferenceOnRandomShapes) {
  std::mt19937 rng(4242);
  for (int i = 0; i < 300; ++i) {
    const Case c = random_case(rng);
    const std::vector<float> got = run(c, {}, 1);
    std::vector<float> want(got.size());
    reference::conv<float>(c.p, c.x.data(), c.w.data(), bias(c), want.data());
    const auto [err, norm] = test::l2_error_and_norm(got, want);
    // Nine float32 products summed in float32: ~1e-7 relative; the bound leaves room.
    EXPECT_LE(err, 1e-6 * norm + 1e-6)
        << "case " << i << ": N " << c.p.N << " C " << c.p.C << " M " << c.p.M << " in "
        << c.p.in[0] << "x" << c.p.in[1] << " stride " << c.p.w.strides[0] << " pads "
        << c.p.w.pads[0] << "," << c.p.w.pads[1] << "," << c.p.w.pads[2] << "," << c.p.w.pads[3];
  }
}

PTQ_ISA_TEST(OpsDepthwise3x3, BitIdenticalForAnyThreadCount) {
  std::mt19937 rng(99);
  for (int i = 0; i < 40; ++i) {
    Case c = random_case(rng);
    const std::vector<float> one = run(c, {}, 1);
    EXPECT_TRUE(same_bits(one, run(c, {}, 2))) << "case " << i;
    EXPECT_TRUE(same_bits(one, run(c, {}, 3))) << "case " << i;
  }
}

// Fused: (sum + bias) + residual, then the activation, as the separate Add and Relu / Clip
// kernels compute them from the unfused output.
PTQ_ISA_TEST(OpsDepthwise3x3, FusedEpilogueEqualsSeparateOps) {
  std::mt19937 rng(7);
  for (int i = 0; i < 30; ++i) {
    const Case c = random_case(rng);
    const std::vector<float> plain = run(c, {}, 1);
    for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kClip}) {
      for (bool with_res : {false, true}) {
        const ConvEpilogue e{with_res ? c.res.data() : nullptr, act, -0.5f, 1.5f};
        std::vector<float> want(plain.size());
        for (size_t k = 0; k < plain.size(); ++k) {
          want[k] = activate(with_res ? plain[k] + c.res[k] : plain[k], act, e.lo, e.hi);
        }
        EXPECT_TRUE(same_bits(run(c, e, 1), want))
            << "case " << i << " act " << static_cast<int>(act) << " residual " << with_res;
      }
    }
  }
}

#endif

// Geometries it does not take are left to the general kernels.
PTQ_ISA_TEST(OpsDepthwise3x3, DeclinesOtherGeometries) {
  std::mt19937 rng(1);
  Case c = random_case(rng);
  c.p.w.dilations = {2, 2};
  std::vector<float> y(static_cast<size_t>(out_size(c.p)));
  EXPECT_FALSE(depthwise3x3(c.p, c.x.data(), c.w.data(), nullptr, y.data(), {}, 1));
  c = random_case(rng);
  c.p.w.strides = {1, 2};
  EXPECT_FALSE(depthwise3x3(c.p, c.x.data(), c.w.data(), nullptr, y.data(), {}, 1));
}

}  // namespace
}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
