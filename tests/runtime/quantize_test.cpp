// QuantizeLinear / DequantizeLinear: round half to even, saturation, per-tensor, per-axis and
// blocked scales, 16-bit types, against a float64 formula written here.
#include <random>

#include <fmt/format.h>

#include "kernel_harness.h"

namespace ptq::runtime::testing {
namespace {

TEST(QuantizeLinear, RoundsHalfToEvenAndSaturates) {
  const ir::Tensor x =
      ir::make_tensor<float>({8}, {0.5f, 1.5f, 2.5f, -2.5f, -0.5f, 1000.f, -1000.f, 0.26f});
  const ir::Tensor scale = ir::make_tensor<float>({}, {0.5f});
  const ir::Tensor zp = ir::make_tensor<int8_t>({}, {1});
  auto y = run_kernel(make_node("QuantizeLinear", 3, 1), 13, {&x, &scale, &zp}, false);
  ASSERT_EQ(y[0].dtype(), ir::DType::kInt8);
  // x / 0.5 = 1, 3, 5, -5, -1, 2000, -2000, 0.52 -> round even -> + 1 -> clamp.
  const int8_t want[8] = {2, 4, 6, -4, 0, 127, -128, 2};
  for (int i = 0; i < 8; ++i) EXPECT_EQ(y[0].data<int8_t>()[i], want[i]) << i;
  // Ties: x / s = 2.5 -> 2, 3.5 -> 4, -2.5 -> -2 (uint8 default without zero point: clamp at 0).
  const ir::Tensor ties = ir::make_tensor<float>({3}, {2.5f, 3.5f, -2.5f});
  const ir::Tensor one = ir::make_tensor<float>({1}, {1.0f});
  auto u = run_kernel(make_node("QuantizeLinear", 2, 1), 13, {&ties, &one}, false);
  ASSERT_EQ(u[0].dtype(), ir::DType::kUInt8);
  EXPECT_EQ(u[0].data<uint8_t>()[0], 2);
  EXPECT_EQ(u[0].data<uint8_t>()[1], 4);
  EXPECT_EQ(u[0].data<uint8_t>()[2], 0);
}

// The contiguous-run kernels (per-tensor and per-axis scales) against the per-element reference
// loops, bit for bit, on random values with exact ties (x = (k + 0.5) * scale) and values past
// saturation mixed in, for int8, uint8 and int16, on 1 and 3 threads.
TEST(QuantizeLinear, RunsMatchTheReferenceLoops) {
  std::mt19937 rng(52);
  const ir::Tensor scales = ir::make_tensor<float>({5}, {0.013f, 0.5f, 0.02f, 0.7f, 0.0031f});
  ir::Tensor x = random_tensor(rng, {3, 5, 37, 9}, -4.0f, 4.0f);
  float* xp = x.data<float>();
  for (int64_t i = 0; i < x.size(); i += 7) {
    const float s = scales.data<float>()[(i / (37 * 9)) % 5];
    xp[i] = (static_cast<float>(i % 41) - 20.0f + 0.5f) * s;  // exact ties (scales in float)
  }
  for (int64_t i = 3; i < x.size(); i += 97) xp[i] = i % 2 == 0 ? 1e4f : -1e4f;
  const ir::Tensor one_scale = ir::make_tensor<float>({}, {0.031f});
  const std::vector<std::pair<ir::Tensor, ir::Tensor>> zero_points{
      {ir::make_tensor<int8_t>({5}, {0, -3, 7, 1, -128}), ir::make_tensor<int8_t>({}, {5})},
      {ir::make_tensor<uint8_t>({5}, {128, 0, 255, 3, 90}), ir::make_tensor<uint8_t>({}, {128})},
      {ir::make_tensor<int16_t>({5}, {0, -300, 7, 1000, 0}), ir::make_tensor<int16_t>({}, {-2})}};
  for (const auto& [axis_zp, tensor_zp] : zero_points) {
    for (bool per_axis : {false, true}) {
      const ir::Tensor& s = per_axis ? scales : one_scale;
      const ir::Tensor& z = per_axis ? axis_zp : tensor_zp;
      const ir::Node q = make_node("QuantizeLinear", 3, 1, {attr_int("axis", 1)});
      const ir::Node dq = make_node("DequantizeLinear", 3, 1, {attr_int("axis", 1)});
      const std::string what =
          fmt::format("{} {}", ir::dtype_name(z.dtype()), per_axis ? "axis" : "tensor");
      auto ref = run_kernel(q, 21, {&x, &s, &z}, true);
      auto ref_back = run_kernel(dq, 21, {&ref[0], &s, &z}, true);
      for (int threads : {1, 3}) {
        auto got = run_kernel(q, 21, {&x, &s, &z}, false, threads);
        EXPECT_TRUE(bit_identical(got[0], ref[0])) << what << " threads " << threads;
        auto back = run_kernel(dq, 21, {&ref[0], &s, &z}, false, threads);
        EXPECT_TRUE(bit_identical(back[0], ref_back[0])) << what << " threads " << threads;
      }
    }
  }
}

// Per-axis on axis 1 of [2, 3, 4] and the round trip Q -> DQ within half a step.
TEST(QuantizeLinear, PerAxisAgainstFormulaAndRoundTrip) {
  std::mt19937 rng(51);
  const ir::Tensor x = random_tensor(rng, {2, 3, 4}, -3.0f, 3.0f);
  const ir::Tensor scale = ir::make_tensor<float>({3}, {0.01f, 0.02f, 0.05f});
  const ir::Tensor zp = ir::make_tensor<uint8_t>({3}, {128, 100, 0});
  auto q = run_kernel(make_node("QuantizeLinear", 3, 1, {attr_int("axis", 1)}), 13,
                      {&x, &scale, &zp}, false, 2);
  auto dq = run_kernel(make_node("DequantizeLinear", 3, 1, {attr_int("axis", -2)}), 13,
                       {&q[0], &scale, &zp}, false, 2);
  for (int64_t i = 0; i < 24; ++i) {
    const int64_t c = (i / 4) % 3;
    const double s = scale.data<float>()[c], z = zp.data<uint8_t>()[c];
    const double want = std::clamp(std::nearbyint(double(x.data<float>()[i]) / s) + z, 0.0, 255.0);
    EXPECT_EQ(q[0].data<uint8_t>()[i], static_cast<uint8_t>(want)) << i;
    EXPECT_FLOAT_EQ(dq[0].data<float>()[i], static_cast<float>((want - z) * s)) << i;
    if (want > 0 && want < 255) {
      EXPECT_LE(std::abs(dq[0].data<float>()[i] - x.data<float>()[i]), s / 2 + 1e-6);
    }
  }
}

TEST(QuantizeLinear, Int16AndBlockedAtOpset21) {
  std::mt19937 rng(52);
  const ir::Tensor x = random_tensor(rng, {2, 6}, -10.0f, 10.0f);
  // Blocks of 4 along axis 1: scale [2, 2].
  const ir::Tensor scale = ir::make_tensor<float>({2, 2}, {0.001f, 0.002f, 0.003f, 0.004f});
  const ir::Tensor zp = ir::make_tensor<int16_t>({2, 2}, {0, 10, -10, 5});
  auto q = run_kernel(
      make_node("QuantizeLinear", 3, 1, {attr_int("axis", 1), attr_int("block_size", 4)}), 21,
      {&x, &scale, &zp}, false);
  ASSERT_EQ(q[0].dtype(), ir::DType::kInt16);
  auto dq = run_kernel(
      make_node("DequantizeLinear", 3, 1, {attr_int("axis", 1), attr_int("block_size", 4)}), 21,
      {&q[0], &scale, &zp}, false);
  for (int64_t r = 0; r < 2; ++r) {
    for (int64_t c = 0; c < 6; ++c) {
      const int64_t k = r * 2 + c / 4;
      const double s = scale.data<float>()[k], z = zp.data<int16_t>()[k];
      const double want = std::clamp(std::nearbyint(double(x.data<float>()[r * 6 + c]) / s) + z,
                                     -32768.0, 32767.0);
      EXPECT_EQ(q[0].data<int16_t>()[r * 6 + c], static_cast<int16_t>(want));
      EXPECT_FLOAT_EQ(dq[0].data<float>()[r * 6 + c], static_cast<float>((want - z) * s));
    }
  }
  // output_dtype without a zero point picks the type.
  const ir::Tensor s1 = ir::make_tensor<float>({}, {0.1f});
  auto u16 = run_kernel(make_node("QuantizeLinear", 2, 1, {attr_int("output_dtype", 4)}), 21,
                        {&x, &s1}, false);
  EXPECT_EQ(u16[0].dtype(), ir::DType::kUInt16);
}

TEST(QuantizeLinear, ErrorsNameTheShapes) {
  const ir::Tensor x(ir::DType::kFloat32, {2, 3, 4});
  const ir::Tensor scale = ir::make_tensor<float>({4}, {1, 1, 1, 1});
  const std::string e = kernel_error(make_node("QuantizeLinear", 2, 1), 13, {&x, &scale});
  EXPECT_NE(e.find("[4]"), std::string::npos) << e;
  EXPECT_NE(e.find("[2, 3, 4]"), std::string::npos) << e;
}

TEST(DequantizeLinear, Int32BiasStyle) {
  const ir::Tensor x = ir::make_tensor<int32_t>({3}, {-1000000, 0, 123});
  const ir::Tensor s = ir::make_tensor<float>({}, {0.5f});
  auto y = run_kernel(make_node("DequantizeLinear", 2, 1), 13, {&x, &s}, false);
  EXPECT_EQ(y[0].data<float>()[0], -500000.0f);
  EXPECT_EQ(y[0].data<float>()[2], 61.5f);
}

}  // namespace
}  // namespace ptq::runtime::testing
