// The activation a fused kernel applies to its output (Epilogue in ptq/runtime.h), computed as
// the separate Relu and Clip kernels compute it (activation.cpp), so that a fused result is
// bit-identical to the unfused one, NaN and signed zeros included.
#pragma once

#if !defined(PTQ_ISA_NS)
#error "include isa_begin.h first: this header is compiled once per instruction-set level"
#endif

#include <algorithm>
#include <cstdint>

#include "lanes.h"
#include "ptq/runtime.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

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
#if PTQ_AVX512
inline __m512 activate(__m512 x, Activation a, __m512 lo, __m512 hi) {
  if (a == Activation::kRelu) return _mm512_max_ps(x, _mm512_setzero_ps());
  if (a == Activation::kClip) return _mm512_min_ps(hi, _mm512_max_ps(lo, x));
  return x;
}

// y[l] = activate(v[l] + *bias + res[l]) for the lanes l of k, in the GEMM epilogue's order
// (bias and res may be null: no term): finished sums written out from registers.
inline void finish_vector(__m512 v, __mmask16 k, const float* bias, const float* res,
                          Activation a, __m512 lo, __m512 hi, float* y) {
  if (bias != nullptr) v = _mm512_add_ps(v, _mm512_set1_ps(*bias));
  if (res != nullptr) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(k, res));
  _mm512_mask_storeu_ps(y, k, activate(v, a, lo, hi));
}

// The same for y[i], i < n, from s[i]: a run of finished sums written out from a tile of them.
inline void finish_run(const float* s, int64_t n, const float* bias, const float* res,
                       Activation a, __m512 lo, __m512 hi, float* y) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 k = lane_mask(n - i);
    finish_vector(_mm512_maskz_loadu_ps(k, s + i), k, bias, res != nullptr ? res + i : nullptr,
                  a, lo, hi, y + i);
  }
}
#endif
#if PTQ_AVX2
inline __m256 activate(__m256 x, Activation a, __m256 lo, __m256 hi) {
  if (a == Activation::kRelu) return _mm256_max_ps(x, _mm256_setzero_ps());
  if (a == Activation::kClip) return _mm256_min_ps(hi, _mm256_max_ps(lo, x));
  return x;
}
#endif

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
