// Convolutions whose output streams_output() takes write it with non-temporal stores (conv.h):
// a 1x1 conv (the GEMM reading its input rows in place) and an RGB stem (conv_shifted writing
// each output row in place), each with a 34 MB output, against the float64-accumulating
// reference with the epilogue applied after it; random inputs, fixed seeds.
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

PTQ_ISA_FIXTURE(OpsConvStream);

#if PTQ_AVX512

ConvParams square(int64_t c, int64_t m, int64_t in, int64_t kernel, int64_t stride) {
  ConvParams p;
  const int64_t pad = kernel / 2;
  p.N = 1, p.C = c, p.M = m, p.G = 1, p.in = {in, in};
  p.out = {(in + 2 * pad - kernel) / stride + 1, (in + 2 * pad - kernel) / stride + 1};
  p.w.kernel = {kernel, kernel}, p.w.strides = {stride, stride}, p.w.dilations = {1, 1};
  p.w.pads = {pad, pad, pad, pad};
  return p;
}

// conv_fast with a bias and Relu against the reference + bias, then Relu.
void expect_streamed_like_the_reference(const ConvParams& p, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t k = p.C * p.w.kernel[0] * p.w.kernel[1];
  const int64_t out = p.M * p.out[0] * p.out[1];
  ASSERT_TRUE(streams_output(out));
  const std::vector<float> x = test::random_floats(rng, p.C * p.in[0] * p.in[1], -1.0f, 1.0f);
  const std::vector<float> w = test::random_floats(rng, p.M * k, -1.0f, 1.0f);
  const std::vector<float> b = test::random_floats(rng, p.M, -1.0f, 1.0f);
  std::vector<float> packed(static_cast<size_t>(packed_a_floats(p.M, k)));
  pack_conv_weights(w.data(), p.M, 1, k, packed.data());
  // 64-byte aligned, as the executor's arena hands buffers out.
  std::vector<float> buffer(static_cast<size_t>(out + 16));
  float* y = buffer.data() + (16 - reinterpret_cast<uintptr_t>(buffer.data()) / 4 % 16) % 16;
  const ConvEpilogue e{nullptr, Activation::kRelu, 0.0f, 0.0f};
  ASSERT_TRUE(conv_fast(p, x.data(), w.data(), packed.data(), b.data(), y, e, 2));
  std::vector<float> want(static_cast<size_t>(out));
  reference::conv<float>(p, x.data(), w.data(), b.data(), want.data());
  for (float& v : want) v = std::max(v, 0.0f);
  const auto [err, norm] = test::l2_error_and_norm(std::vector<float>(y, y + out), want);
  EXPECT_LE(err, 1e-6 * norm);
}

PTQ_ISA_TEST(OpsConvStream, LargePointwiseOutputMatchesReference) {
  expect_streamed_like_the_reference(square(4, 64, 363, 1, 1), 3);
}

PTQ_ISA_TEST(OpsConvStream, LargeRgbStemOutputMatchesReference) {
  expect_streamed_like_the_reference(square(3, 64, 725, 3, 2), 4);
}

#endif

}  // namespace
}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
