// The activation a fused kernel applies to its output (Epilogue in ptq/runtime.h), computed as
// the separate Relu and Clip kernels compute it (activation.cpp), so that a fused result is
// bit-identical to the unfused one, NaN and signed zeros included.
#pragma once

#include <algorithm>

#include "ptq/runtime.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace ptq::runtime::cpu {

using Activation = Epilogue::Activation;

// Relu is x > 0 ? x : 0 (NaN and -0 give +0); Clip is std::min(std::max(x, lo), hi), i.e.
// x < lo ? lo : x, then hi < that ? hi : that (NaN stays NaN).
inline float activate(float x, Activation a, float lo, float hi) {
  if (a == Activation::kRelu) return x > 0.0f ? x : 0.0f;
  if (a == Activation::kClip) return std::min(std::max(x, lo), hi);
  return x;
}

// The vector forms rest on (v)maxps / minps returning their second operand unless the first
// compares greater / less (so when one is NaN, or both are zeros): max(x, 0) is x > 0 ? x : 0,
// max(lo, x) is x < lo ? lo : x, min(hi, x) is hi < x ? hi : x.
#if defined(__AVX512F__)
inline __m512 activate(__m512 x, Activation a, __m512 lo, __m512 hi) {
  if (a == Activation::kRelu) return _mm512_max_ps(x, _mm512_setzero_ps());
  if (a == Activation::kClip) return _mm512_min_ps(hi, _mm512_max_ps(lo, x));
  return x;
}
#endif
#if defined(__AVX2__)
inline __m256 activate(__m256 x, Activation a, __m256 lo, __m256 hi) {
  if (a == Activation::kRelu) return _mm256_max_ps(x, _mm256_setzero_ps());
  if (a == Activation::kClip) return _mm256_min_ps(hi, _mm256_max_ps(lo, x));
  return x;
}
#endif

}  // namespace ptq::runtime::cpu
