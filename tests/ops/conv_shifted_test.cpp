// The conv on shifted rows of a padded, phase-split input (conv_shifted.cpp) against the
// float64-accumulating reference conv on random shapes (fixed seeds): kernels 1x2 to 5x5,
// strides 1 to 3, dilations, asymmetric pads, batches, 8-24 input channels, row counts that
// leave partial micro-panels; bit-identical for any thread count, and its fused residual +
// activation bit-identical to the separate ops; images interleaved (small outputs) equal to
// each image alone.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "op_test_util.h"

#include "common/isa_suite.h"
#include "isa_begin.h"
#include "conv.h"
#include "gemm_packed.h"
#include "isa_end.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {
namespace {

PTQ_ISA_FIXTURE(OpsConvShifted);

struct Case {
  ConvParams p;
  std::vector<float> x, w, packed, b, res;
};

std::vector<float> randoms(std::mt19937& rng, int64_t n) {
  return test::random_floats(rng, n, -1.0f, 1.0f);
}

// p.out from the rest of p (the end pads grown where needed for at least one output).
void set_outputs(ConvParams& p) {
  p.out.clear();
  for (size_t i = 0; i < 2; ++i) {
    const int64_t extent = (p.w.kernel[i] - 1) * p.w.dilations[i] + 1;
    const int64_t span = p.in[i] + p.w.pads[i] + p.w.pads[i + 2] - extent;
    if (span < 0) p.w.pads[i + 2] += -span;
    p.out.push_back((p.in[i] + p.w.pads[i] + p.w.pads[i + 2] - extent) / p.w.strides[i] + 1);
  }
}

// Random inputs, weights (and their packing), maybe a bias, and a residual for geometry p.
Case with_data(std::mt19937& rng, const ConvParams& p) {
  Case c;
  c.p = p;
  const int64_t k = p.C * p.w.kernel[0] * p.w.kernel[1];
  c.x = randoms(rng, p.N * p.C * p.in[0] * p.in[1]);
  c.w = randoms(rng, p.M * k);
  c.packed.resize(static_cast<size_t>(packed_a_floats(p.M, k)));
  pack_conv_weights(c.w.data(), p.M, 1, k, c.packed.data());
  if (std::uniform_int_distribution<int64_t>(0, 1)(rng) == 1) c.b = randoms(rng, p.M);
  c.res = randoms(rng, p.N * p.M * p.out[0] * p.out[1]);
  return c;
}

// A random geometry conv_shifted takes (wide enough outputs, kernel above 1x1).
Case random_case(std::mt19937& rng) {
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  ConvParams p;
  p.N = pick(1, 3);  // several images: padded in rounds on 2+ threads, one a thread on 1
  p.C = pick(8, 24);  // fewer input channels (an RGB stem) are taken on some thread counts only
  p.M = pick(1, 40);
  p.G = 1;
  do {
    p.w.kernel = {pick(1, 5), pick(1, 5)};
  } while (p.w.kernel[0] * p.w.kernel[1] == 1);
  p.w.strides = {pick(1, 3), pick(1, 3)};
  p.w.dilations = {pick(1, 2), pick(1, 2)};
  p.w.pads = {pick(0, 3), pick(0, 3), pick(0, 3), pick(0, 3)};
  p.in = {pick(1, 24), pick(12, 40) * p.w.strides[1]};
  set_outputs(p);
  return with_data(rng, p);
}

#if PTQ_AVX512  // the kernel exists at the AVX-512 level only
const float* bias(const Case& c) { return c.b.empty() ? nullptr : c.b.data(); }

// Runs conv_shifted; `taken` says whether it handled the shape.
std::vector<float> run(const Case& c, const ConvEpilogue& e, int threads, bool& taken) {
  std::vector<float> y(static_cast<size_t>(c.p.N * c.p.M * c.p.out[0] * c.p.out[1]), NAN);
  taken = conv_shifted(c.p, c.x.data(), c.packed.data(), bias(c), y.data(), e, threads);
  return y;
}

// The L2 norms of got - reference and of the reference (the float64-accumulating conv).
std::pair<double, double> error_and_norm(const Case& c, const std::vector<float>& got) {
  std::vector<float> want(got.size());
  reference::conv<float>(c.p, c.x.data(), c.w.data(), bias(c), want.data());
  return test::l2_error_and_norm(got, want);
}

using test::same_bits;

PTQ_ISA_TEST(OpsConvShifted, MatchesReferenceOnRandomShapes) {
  std::mt19937 rng(2024);
  int taken_count = 0;
  for (int i = 0; i < 60; ++i) {
    const Case c = random_case(rng);
    bool taken = false;
    const std::vector<float> got = run(c, {}, 1, taken);
    if (!taken) continue;  // too narrow for it; the im2col path runs those
    ++taken_count;
    const auto [err, norm] = error_and_norm(c, got);
    // Up to 500 float32 products summed in float32: ~1e-6 relative at most.
    EXPECT_LE(err, 1e-5 * norm + 1e-6)
        << "case " << i << ": N " << c.p.N << " C " << c.p.C << " M " << c.p.M << " in "
        << c.p.in[0] << "x" << c.p.in[1] << " kernel " << c.p.w.kernel[0] << "x"
        << c.p.w.kernel[1];
  }
  EXPECT_GE(taken_count, 40);  // the generator's shapes are mostly wide enough
}

PTQ_ISA_TEST(OpsConvShifted, BitIdenticalForAnyThreadCount) {
  std::mt19937 rng(5);
  for (int i = 0; i < 25; ++i) {
    const Case c = random_case(rng);
    bool taken = false;
    const std::vector<float> one = run(c, {}, 1, taken);
    if (!taken) continue;
    EXPECT_TRUE(same_bits(one, run(c, {}, 2, taken))) << "case " << i;
    EXPECT_TRUE(same_bits(one, run(c, {}, 3, taken))) << "case " << i;
    EXPECT_TRUE(same_bits(one, run(c, {}, 16, taken))) << "case " << i;  // rounds of 3 images
  }
}

// Fused: (sum + bias) + residual, then the activation, as the separate Add and Relu / Clip
// kernels compute them from the unfused output.
PTQ_ISA_TEST(OpsConvShifted, FusedEpilogueEqualsSeparateOps) {
  std::mt19937 rng(77);
  for (int i = 0; i < 20; ++i) {
    const Case c = random_case(rng);
    bool taken = false;
    const std::vector<float> plain = run(c, {}, 1, taken);
    if (!taken) continue;
    for (Activation act : {Activation::kRelu, Activation::kClip}) {
      const ConvEpilogue e{c.res.data(), act, -0.25f, 0.5f};
      std::vector<float> want(plain.size());
      for (size_t k = 0; k < plain.size(); ++k) {
        want[k] = activate(plain[k] + c.res[k], act, e.lo, e.hi);
      }
      EXPECT_TRUE(same_bits(run(c, e, 1, taken), want))
          << "case " << i << " act " << static_cast<int>(act);
    }
  }
}

// Image n of case c as a case of its own (same weights and bias).
Case image_of(const Case& c, int64_t n) {
  Case one = c;
  one.p.N = 1;
  const size_t in = static_cast<size_t>(c.p.C * c.p.in[0] * c.p.in[1]);
  const size_t out = static_cast<size_t>(c.p.M * c.p.out[0] * c.p.out[1]);
  one.x.assign(c.x.begin() + n * in, c.x.begin() + (n + 1) * in);
  one.res.assign(c.res.begin() + n * out, c.res.begin() + (n + 1) * out);
  return one;
}

// Small outputs of several images go through a copy with the images interleaved: each image's
// outputs equal that image convolved alone (its own padded copy, or im2col) bit for bit, with
// the fused residual and activation, on any thread count, and match the reference conv.
// Shapes: 9 images (a partial 16-image gather), 80 (two column blocks a row), dilated, 2x3
// unpadded.
PTQ_ISA_TEST(OpsConvShifted, InterleavedImagesEqualEachImageAlone) {
  std::mt19937 rng(31);
  struct Shape {
    int64_t n, c, m, h, w, kh, kw, d, pad;
  };
  for (const Shape& s : {Shape{9, 24, 40, 7, 7, 3, 3, 1, 1}, Shape{80, 8, 20, 7, 7, 3, 3, 1, 1},
                        Shape{7, 12, 30, 7, 9, 3, 3, 2, 2}, Shape{17, 10, 16, 4, 5, 2, 3, 1, 0}}) {
    ConvParams p;
    p.N = s.n, p.C = s.c, p.M = s.m, p.G = 1, p.in = {s.h, s.w};
    p.w.kernel = {s.kh, s.kw}, p.w.strides = {1, 1}, p.w.dilations = {s.d, s.d};
    p.w.pads = {s.pad, s.pad, s.pad, s.pad};
    set_outputs(p);
    const Case c = with_data(rng, p);
    ASSERT_TRUE(conv_shifted_interleaves(c.p)) << "shape " << s.n << "x" << s.c;
    bool taken = false;
    const auto [err, norm] = error_and_norm(c, run(c, {}, 1, taken));
    ASSERT_TRUE(taken);
    EXPECT_LE(err, 1e-5 * norm + 1e-6) << "shape " << s.n << "x" << s.c;
    const ConvEpilogue e{c.res.data(), Activation::kRelu, 0.0f, 0.0f};
    const std::vector<float> all = run(c, e, 1, taken);
    const size_t out = static_cast<size_t>(c.p.M * c.p.out[0] * c.p.out[1]);
    for (int64_t n = 0; n < c.p.N; ++n) {
      const Case one = image_of(c, n);
      ASSERT_FALSE(conv_shifted_interleaves(one.p));
      std::vector<float> alone(out, NAN);  // by whichever kernel takes one image (conv_fast)
      ASSERT_TRUE(conv_fast(one.p, one.x.data(), one.w.data(), one.packed.data(), bias(one),
                            alone.data(), {one.res.data(), Activation::kRelu, 0, 0}, 1));
      const std::vector<float> mine(all.begin() + n * out, all.begin() + (n + 1) * out);
      EXPECT_TRUE(same_bits(mine, alone)) << "shape " << s.n << "x" << s.c << " image " << n;
    }
    for (int t : {2, 3, 16}) EXPECT_TRUE(same_bits(all, run(c, e, t, taken))) << "threads " << t;
  }
}

#endif

// Grouped, 1x1 and unpacked calls are left to the other kernels.
PTQ_ISA_TEST(OpsConvShifted, DeclinesOtherGeometries) {
  std::mt19937 rng(3);
  Case c = random_case(rng);
  std::vector<float> y(static_cast<size_t>(c.p.N * c.p.M * c.p.out[0] * c.p.out[1]));
  EXPECT_FALSE(conv_shifted(c.p, c.x.data(), nullptr, nullptr, y.data(), {}, 1));
  Case grouped = c;
  grouped.p.G = 2;
  EXPECT_FALSE(conv_shifted(grouped.p, c.x.data(), c.packed.data(), nullptr, y.data(), {}, 1));
  Case one = c;
  one.p.w.kernel = {1, 1};
  EXPECT_FALSE(conv_shifted(one.p, one.x.data(), one.packed.data(), nullptr, y.data(), {}, 1));
  Case rgb = c;  // a stem: the x and packed buffers are larger than 3 channels need
  rgb.p.C = 3;
  rgb.p.N = 7;  // fewer than 4 images a thread: padded in rounds, where im2col is faster
  rgb.x.resize(static_cast<size_t>(7 * 3 * c.p.in[0] * c.p.in[1]));
  y.resize(static_cast<size_t>(7 * c.p.M * c.p.out[0] * c.p.out[1]));
  EXPECT_FALSE(conv_shifted(rgb.p, rgb.x.data(), rgb.packed.data(), nullptr, y.data(), {}, 2));
}

#if PTQ_AVX512
// An RGB stem (3 input channels, a kernel x kernel window at stride 2, pads kernel / 2) over n
// images of h x w, m output channels, with data and always a bias.
Case rgb_stem(std::mt19937& rng, int64_t n, int64_t m, int64_t h, int64_t w, int64_t kernel) {
  ConvParams p;
  const int64_t pad = kernel / 2;
  p.N = n, p.C = 3, p.M = m, p.G = 1, p.in = {h, w};
  p.w.kernel = {kernel, kernel}, p.w.strides = {2, 2}, p.w.dilations = {1, 1};
  p.w.pads = {pad, pad, pad, pad};
  set_outputs(p);
  Case c = with_data(rng, p);
  if (c.b.empty()) c.b = randoms(rng, m);
  return c;
}

// An RGB stem (7x7/2, pad 3) whose images each thread pads itself: 8 images on 1 and 2
// threads, against the reference and bit for bit.
PTQ_ISA_TEST(OpsConvShifted, StemWithImagesOfItsOwnMatchesReference) {
  std::mt19937 rng(12);
  const Case c = rgb_stem(rng, 8, 20, 29, 38, 7);
  ASSERT_EQ(c.p.out, (std::vector<int64_t>{15, 19}));
  bool taken = false;
  const std::vector<float> one = run(c, {}, 1, taken);
  ASSERT_TRUE(taken);
  const auto [err, norm] = error_and_norm(c, one);
  EXPECT_LE(err, 1e-5 * norm);
  const std::vector<float> two = run(c, {}, 2, taken);
  ASSERT_TRUE(taken);
  EXPECT_TRUE(same_bits(one, two));
}

// A 3x3/2 RGB stem at batch 1 (27 taps: each output row a GEMM written in place), outputs 35
// wide (a partial last panel), 32 channels (a 4-row micro-panel tail), with a residual and a
// Clip: against the reference plus the separate ops, bit for bit on 1, 2 and 3 threads.
PTQ_ISA_TEST(OpsConvShifted, RgbStemAtBatchOneMatchesReference) {
  std::mt19937 rng(21);
  const Case c = rgb_stem(rng, 1, 32, 41, 70, 3);
  ASSERT_EQ(c.p.out, (std::vector<int64_t>{21, 35}));
  const std::vector<float>& res = c.res;
  const ConvEpilogue e{res.data(), Activation::kClip, -0.5f, 0.75f};
  bool taken = false;
  const std::vector<float> one = run(c, e, 1, taken);
  ASSERT_TRUE(taken);
  std::vector<float> want(res.size());
  reference::conv<float>(c.p, c.x.data(), c.w.data(), bias(c), want.data());
  for (size_t i = 0; i < want.size(); ++i) want[i] = std::clamp(want[i] + res[i], -0.5f, 0.75f);
  const auto [err, norm] = test::l2_error_and_norm(one, want);
  EXPECT_LE(err, 1e-6 * norm);
  for (int t : {2, 3}) {
    EXPECT_TRUE(same_bits(one, run(c, e, t, taken))) << "threads " << t;
    EXPECT_TRUE(taken);
  }
}
#endif

}  // namespace
}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
