// Row copies for the zero-padded, stride-phase-split input planes the convolution kernels
// build (conv_fast.cpp's depthwise, conv_shifted.cpp): zero, copy, copy every step-th float.
#pragma once

#if !defined(PTQ_ISA_NS)
#error "include isa_begin.h first: this header is compiled once per instruction-set level"
#endif

#include <algorithm>
#include <cstdint>

#include "lanes.h"

namespace ptq::runtime::cpu::PTQ_ISA_NS {

// Zeroes / copies n floats. The rows of a padded plane are short, so inline masked vector
// moves beat memset/memcpy calls.
inline void zero_floats(float* d, int64_t n) {
#if PTQ_AVX512
  for (int64_t i = 0; i < n; i += 16) {
    _mm512_mask_storeu_ps(d + i, lane_mask(n - i), _mm512_setzero_ps());
  }
#else
  std::fill(d, d + n, 0.0f);
#endif
}

inline void copy_floats(const float* s, int64_t n, float* d) {
#if PTQ_AVX512
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = lane_mask(n - i);
    _mm512_mask_storeu_ps(d + i, m, _mm512_maskz_loadu_ps(m, s + i));
  }
#else
  std::copy(s, s + n, d);
#endif
}

// dst[i] = src[i * step] for i < n: a plain copy for step 1; for step 2, pairs of vectors
// narrowed to their even lanes (masked so nothing past src[(n - 1) * 2] is read).
inline void copy_strided(const float* src, int64_t step, int64_t n, float* dst) {
  if (step == 1) {
    copy_floats(src, n, dst);
    return;
  }
  int64_t i = 0;
#if PTQ_AVX512
  if (step == 2) {
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    for (; i < n; i += 16) {
      const int64_t out = std::min<int64_t>(16, n - i), in = 2 * out - 1;
      const __m512 a = _mm512_maskz_loadu_ps(lane_mask(in), src + 2 * i);
      const __m512 b = _mm512_maskz_loadu_ps(lane_mask(in - 16), src + 2 * i + 16);
      _mm512_mask_storeu_ps(dst + i, lane_mask(out), _mm512_permutex2var_ps(a, even, b));
    }
    return;
  }
#endif
  for (; i < n; ++i) dst[i] = src[i * step];
}

}  // namespace ptq::runtime::cpu::PTQ_ISA_NS
