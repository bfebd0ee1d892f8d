#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ptq/ir.h"

using namespace ptq::ir;

TEST(Tensor, OwnedIsZeroFilledAndAligned) {
  Tensor t(DType::kFloat32, {2, 3});
  EXPECT_EQ(t.size(), 6);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  for (float v : t.span<float>()) EXPECT_EQ(v, 0.0f);
}

TEST(Tensor, CopyOfOwnedIsDeepCopyOfBorrowedIsView) {
  Tensor a = make_tensor<float>({3}, {1.0f, 2.0f, 3.0f});
  Tensor b = a;
  b.data<float>()[0] = 9.0f;
  EXPECT_EQ(a.data<float>()[0], 1.0f);
  float buf[2] = {4.0f, 5.0f};
  Tensor v = Tensor::borrow(DType::kFloat32, {2}, buf);
  Tensor w = v;
  EXPECT_EQ(w.data<float>(), buf);
  EXPECT_FALSE(w.owns_data());
}

TEST(Tensor, MoveLeavesSourceEmpty) {
  Tensor a(DType::kInt64, {4});
  Tensor b = std::move(a);
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(b.size(), 4);
}

TEST(Tensor, ScalarAndZeroSized) {
  Tensor s(DType::kFloat32, {});
  EXPECT_EQ(s.size(), 1);
  Tensor z(DType::kFloat32, {0, 5});
  EXPECT_EQ(z.size(), 0);
  EXPECT_EQ(z.nbytes(), 0u);
}

TEST(DType, HalfRoundTripMatchesFloat64Reference) {
  // Every finite half value converts to float exactly and back to the same bits.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if (((h >> 10) & 0x1f) == 0x1f) continue;  // inf/NaN
    float f = half_to_float(static_cast<uint16_t>(h));
    ASSERT_EQ(float_to_half(f), h) << h;
    // Independent value check in float64: (-1)^s * 2^(e-15) * (1 + m/1024), or subnormal.
    int e = static_cast<int>((h >> 10) & 0x1f), m = static_cast<int>(h & 0x3ff);
    double ref = e == 0 ? std::ldexp(m, -24) : std::ldexp(1.0 + m / 1024.0, e - 15);
    if (h & 0x8000) ref = -ref;
    ASSERT_EQ(static_cast<double>(f), ref) << h;
  }
}

TEST(DType, HalfRoundsToNearestEven) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-60000.0f, 60000.0f);
  for (int i = 0; i < 10000; ++i) {
    float f = dist(rng);
    uint16_t h = float_to_half(f);
    double got = half_to_float(h);
    // The neighbours of h are no closer to f than h is.
    for (int d : {-1, 1}) {
      uint16_t n = static_cast<uint16_t>(h + d);
      if ((n & 0x7fff) >= 0x7c00 || ((n ^ h) & 0x8000)) continue;
      EXPECT_LE(std::abs(got - f), std::abs(static_cast<double>(half_to_float(n)) - f));
    }
  }
}

TEST(DType, BFloat16) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(1.00390625f), 0x3f80);  // tie rounds to even
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(NAN))));
}
