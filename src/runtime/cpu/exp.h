// exp for float32 without a libm call per element, so that a loop over a row vectorises
// (Softmax, whose row loops a libm call per element kept scalar). Cephes' expf: x = n ln2 + r with
// |r| <= ln2 / 2, e^r by a degree-6 polynomial, times 2^n as two exact powers of two. Accurate
// to about one float ulp (tested against float64) where the result is a normal float; below
// -87.34 (ln of the least normal float) it gives 0 instead of a denormal (an absolute error
// under 1.2e-38), above 88.72 +inf. NaN stays NaN.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

namespace ptq::runtime::cpu {

inline float pow2_float(int32_t k) {  // 2^k for -126 <= k <= 127
  return std::bit_cast<float>(static_cast<uint32_t>(k + 127) << 23);
}

inline float exp_float(float x) {
  constexpr float kLo = -87.3365479f, kHi = 88.7228394f;
  const float c = std::max(std::min(x, kHi), kLo);  // NaN passes through
  constexpr float kRound = 12582912.0f;             // 1.5 * 2^23: adding it rounds to an integer
  const float n = (c * 1.44269504f + kRound) - kRound;  // c / ln2 to the nearest (std::floor
                                                        // would not vectorise)
  float r = std::fma(n, -0.693359375f, c);              // c - n ln2, ln2 in two parts
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  const float e = std::fma(p, r * r, r) + 1.0f;
  const int32_t k = x == x ? static_cast<int32_t>(n) : 0;  // -126 <= k <= 128
  const int32_t half = k >> 1;
  float y = e * pow2_float(half) * pow2_float(k - half);
  y = x < kLo ? 0.0f : y;
  y = x > kHi ? INFINITY : y;
  return x == x ? y : x;
}

}  // namespace ptq::runtime::cpu
